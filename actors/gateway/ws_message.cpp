#include "actors/gateway/ws_message.hpp"

#include "actors/gateway/openai_request.hpp"

namespace inflight::gateway {

using nlohmann::json;

std::expected<ws_message, ws_message_error> try_parse_ws_message(const std::string& text, bool is_text) {
  if (!is_text) {
    return std::unexpected(ws_message_error{
        nullptr, bad_request("binary frames are not supported: send JSON text frames", {}, "binary_frame")});
  }
  auto parsed = try_parse_json(text);
  if (!parsed) return std::unexpected(ws_message_error{nullptr, parsed.error()});
  ws_message msg;
  msg.body = std::move(*parsed);
  const auto id = msg.body.find("id");
  msg.id = id == msg.body.end() ? json(nullptr) : *id;
  if (!msg.id.is_string() && !msg.id.is_number_integer()) {
    // An id of the wrong type is echoed back so that the client can match the error.
    return std::unexpected(ws_message_error{msg.id, bad_request("id must be a string or an integer", "id", "missing_id")});
  }
  msg.key = dump_json(msg.id);
  const auto type = msg.body.find("type");
  const bool has_type = type != msg.body.end() && type->is_string();
  if (has_type && *type == "generate") {
    msg.type = ws_message_type::generate;
  } else if (has_type && *type == "rerank") {
    msg.type = ws_message_type::rerank;
  } else if (has_type && *type == "embed") {
    msg.type = ws_message_type::embed;
  } else if (has_type && *type == "cancel") {
    msg.type = ws_message_type::cancel;
  } else {
    return std::unexpected(
        ws_message_error{msg.id, bad_request("type must be \"generate\", \"rerank\", \"embed\" or \"cancel\"", "type",
                                               "unknown_type")});
  }
  return msg;
}

api_result<ws_generate> try_parse_ws_generate(const json& body, const served_model& model) {
  auto parsed = try_parse_request(body, api_kind::websocket, model);
  if (!parsed) return std::unexpected(parsed.error());
  if (parsed->num_choices() != 1)
    return std::unexpected(bad_request("one prompt and n = 1 per WebSocket request: send several ids", "n"));
  return ws_generate{parsed->choice_request(0), parsed->has_logprobs, parsed->num_top_logprobs};
}

json ws_error_message(const json& id, const api_error& e) {
  return {{"type", "error"}, {"id", id}, {"error", error_object(e)}};
}

}  // namespace inflight::gateway
