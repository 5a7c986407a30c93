#include "actors/gateway/ws_message.hpp"

#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"

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
  msg.ordered_body = parse_ordered_body(text);  // template input and schemas keep the client's order
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

api_result<openai_request> try_parse_ws_generate(const json& body, const served_model& model,
                                                 const nlohmann::ordered_json& ordered) {
  auto parsed = try_parse_request(body, api_kind::websocket, model, ordered);
  if (!parsed) return std::unexpected(parsed.error());
  if (parsed->num_choices() != 1)
    return std::unexpected(bad_request("one prompt and n = 1 per WebSocket request: send several ids", "n"));
  parsed->stream = true;
  return parsed;
}

json ws_error_message(const json& id, const api_error& e, int retry_after_s) {
  json msg = {{"type", "error"}, {"id", id}, {"error", error_object(e)}};
  if (e.status == 429 || e.status == 503) msg["retry_after_s"] = retry_after_s;
  return msg;
}

json ws_token_message(const json& id, const std::string& text, const std::vector<token_id>& token_ids, int index,
                      const json& logprobs) {
  json msg = {{"type", "token"}, {"id", id}, {"text", text}, {"token_ids", token_ids}, {"index", index}};
  if (!logprobs.is_null()) msg["logprobs"] = logprobs;
  return msg;
}

json ws_done_message(const json& id, const char* finish_reason, const finish_event& ev) {
  const auto& t = ev.timings;
  json msg = {{"type", "done"},
              {"id", id},
              {"finish_reason", finish_reason},
              {"usage", usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens, ev.draft_tokens, ev.accepted_tokens)},
              {"timings", {{"queue_ms", t.queue_ms}, {"ttft_ms", t.ttft_ms}, {"tpot_ms", t.tpot_ms}, {"e2e_ms", t.e2e_ms}}}};
  if (ev.cause) msg["message"] = ev.cause->message;
  return msg;
}

}  // namespace inflight::gateway
