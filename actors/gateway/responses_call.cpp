#include "actors/gateway/responses_call.hpp"

#include <string>
#include <utility>

#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/responses_request.hpp"
#include "actors/gateway/responses_shape.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

api_error response_not_found(std::string_view id) {
  return api_error{404, "invalid_request_error", "Response with id '" + std::string(id) + "' not found.", {},
                   "response_not_found"};
}

}  // namespace

api_result<std::shared_ptr<completion_call>> try_make_responses_call(gateway_state& state, const json& body,
                                                                     const nlohmann::ordered_json& ordered, post_fn post,
                                                                     completion_call::emit_fn emit) {
  auto previous_id = try_previous_response_id(body);
  if (!previous_id) return std::unexpected(previous_id.error());
  std::shared_ptr<const conversation_turn> previous;
  if (*previous_id) {
    auto stored = state.responses().find(**previous_id);
    if (!stored) return std::unexpected(previous_response_not_found(**previous_id));
    previous = stored->turn;
  }
  auto request = try_parse_responses(body, std::move(previous), ordered);
  if (!request) return std::unexpected(request.error());
  auto parsed = try_parse_request(request->chat_body, api_kind::chat, state.model(), request->ordered_chat_body);
  if (!parsed) return std::unexpected(to_responses_error(parsed.error()));
  const served_model& model = state.model();
  response_head head{make_response_id("resp_"), unix_now(), model.name, request->echo};
  auto count_tokens = [&model](const std::string& text) { return int(tokenize_text(model, text, false).size()); };
  auto call = std::make_shared<completion_call>(state, std::move(*parsed), std::move(post), std::move(emit));
  call->set_shape(std::make_shared<responses_shape>(std::move(head), *request, state.responses(), count_tokens));
  return call;
}

http_reply answer_stored_response(gateway_state& state, std::string_view method, std::string_view id) {
  const std::string key(id);
  if (method == "DELETE") {
    if (!state.responses().erase(key)) return error_reply(response_not_found(id));
    return json_reply(200, {{"id", key}, {"object", "response"}, {"deleted", true}});
  }
  auto stored = state.responses().find(key);
  if (!stored) return error_reply(response_not_found(id));
  return json_reply(200, stored->response);
}

}  // namespace inflight::gateway
