#include "actors/gateway/anthropic_call.hpp"

#include "actors/gateway/anthropic_request.hpp"
#include "actors/gateway/anthropic_shape.hpp"
#include "actors/gateway/chat_request.hpp"

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

/// The chat request of a Messages body text, parsed as /v1/chat/completions parses it.
api_result<openai_request> try_parse_messages_request(const served_model& m, const std::string& body_text,
                                                      messages_use use) {
  auto body = try_parse_json(body_text);  // the checks of a JSON object body
  if (!body) return std::unexpected(body.error());
  auto chat = try_translate_messages(parse_ordered_body(body_text), m, use);
  if (!chat) return std::unexpected(chat.error());
  auto parsed = try_parse_request(json(*chat), api_kind::chat, m, *chat);
  if (!parsed) return std::unexpected(messages_param_error(parsed.error()));
  return parsed;
}

}  // namespace

api_result<std::shared_ptr<completion_call>> try_make_messages_call(gateway_state& state, const std::string& body_text,
                                                                    post_fn post, completion_call::emit_fn emit) {
  auto parsed = try_parse_messages_request(state.model(), body_text, messages_use::create);
  if (!parsed) return std::unexpected(parsed.error());
  const int num_prompt_tokens = int(parsed->prompts.front().size());
  auto call = std::make_shared<completion_call>(state, std::move(*parsed), std::move(post), std::move(emit));
  call->set_shape(std::make_shared<anthropic_shape>(state.model().name, num_prompt_tokens));
  return call;
}

http_reply count_tokens_reply(gateway_state& state, const std::string& body_text) {
  auto parsed = try_parse_messages_request(state.model(), body_text, messages_use::count_tokens);
  if (!parsed) return anthropic_error_reply(parsed.error());
  return json_reply(200, {{"input_tokens", parsed->prompts.front().size()}});
}

}  // namespace inflight::gateway
