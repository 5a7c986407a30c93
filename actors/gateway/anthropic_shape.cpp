#include "actors/gateway/anthropic_shape.hpp"

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/sse.hpp"

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string_view anthropic_error_type(int status) {
  switch (status) {
    case 400: case 405: case 409: case 422: case 431: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    case 504: return "timeout_error";
    default: return "api_error";
  }
}

json anthropic_error_body(const api_error& e) {
  return {{"type", "error"}, {"error", {{"type", anthropic_error_type(e.status)}, {"message", e.message}}}};
}

http_reply anthropic_error_reply(const api_error& e) { return {e.status, "application/json", dump_json(anthropic_error_body(e)), {}}; }

std::string_view anthropic_stop_reason(std::string_view finish_reason) {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls") return "tool_use";
  return "end_turn";
}

json anthropic_usage(const json& usage) {
  const int prompt = usage.value("prompt_tokens", 0);
  const int cached = usage.contains("prompt_tokens_details") ? usage["prompt_tokens_details"].value("cached_tokens", 0) : 0;
  return {{"input_tokens", prompt - cached},
          {"output_tokens", usage.value("completion_tokens", 0)},
          {"cache_read_input_tokens", cached},
          {"cache_creation_input_tokens", 0}};
}

std::string tool_use_id(std::string_view call_id) {
  if (call_id.starts_with("call_")) call_id.remove_prefix(5);
  return "toolu_" + std::string(call_id);
}

namespace {

/// A tool call's arguments as the input object (an object, whatever the text was), its
/// keys in the order the model wrote them.
ojson tool_input(const json& arguments) {
  if (!arguments.is_string()) return ojson::object();
  ojson input = ojson::parse(arguments.get_ref<const std::string&>(), nullptr, false);
  return input.is_object() ? input : ojson::object();
}

bool is_text(const json& message, const char* key) {
  return message.contains(key) && message[key].is_string() && !message[key].get_ref<const std::string&>().empty();
}

ojson message_head(const std::string& id, const std::string& model) {
  return {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", model}, {"content", json::array()},
          {"stop_reason", nullptr}, {"stop_sequence", nullptr}};
}

}  // namespace

ojson anthropic_message(const json& chat_body, const std::string& id, const std::string& model) {
  ojson out = message_head(id, model);
  const json& choice = chat_body["choices"][0];
  const json& message = choice["message"];
  ojson& content = out["content"];
  if (is_text(message, "reasoning_content"))
    content.push_back({{"type", "thinking"}, {"thinking", message["reasoning_content"]}, {"signature", ""}});
  if (is_text(message, "content")) content.push_back({{"type", "text"}, {"text", message["content"]}});
  if (message.contains("tool_calls")) {
    for (const auto& call : message["tool_calls"]) {
      content.push_back({{"type", "tool_use"},
                         {"id", tool_use_id(call["id"].get<std::string>())},
                         {"name", call["function"]["name"]},
                         {"input", tool_input(call["function"]["arguments"])}});
    }
  }
  out["stop_reason"] = anthropic_stop_reason(choice["finish_reason"].get<std::string>());
  if (const json s = choice.value("stop_reason", json()); s.is_string()) {  // a stop string ended it
    out["stop_reason"] = "stop_sequence";
    out["stop_sequence"] = s;
  }
  out["usage"] = anthropic_usage(chat_body["usage"]);
  return out;
}

std::string anthropic_event(std::string_view name, const json& data) { return sse_named_event(name, data); }

anthropic_shape::anthropic_shape(std::string model, int num_prompt_tokens)
    : id_(make_response_id("msg_")), model_(std::move(model)), num_prompt_tokens_(num_prompt_tokens) {}

std::string anthropic_shape::start_message() {
  if (has_started_) return {};
  has_started_ = true;
  json message = message_head(id_, model_);
  message["usage"] = {{"input_tokens", num_prompt_tokens_}, {"output_tokens", 0},
                      {"cache_read_input_tokens", 0}, {"cache_creation_input_tokens", 0}};
  return anthropic_event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) +
         anthropic_event("ping", {{"type", "ping"}});
}

std::string anthropic_shape::close_block() {
  if (open_ == block_kind::none) return {};
  std::string out;
  // Anthropic ends every thinking block with its signature; a local model has none.
  if (open_ == block_kind::thinking) out += delta({{"type", "signature_delta"}, {"signature", ""}});
  out += anthropic_event("content_block_stop", {{"type", "content_block_stop"}, {"index", num_blocks_ - 1}});
  open_ = block_kind::none;
  return out;
}

std::string anthropic_shape::open_block(block_kind kind, const json& content_block) {
  if (open_ == kind && kind != block_kind::tool_use) return {};
  std::string out = close_block();
  open_ = kind;
  out += anthropic_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", num_blocks_++}, {"content_block", content_block}});
  return out;
}

std::string anthropic_shape::delta(const json& d) const {
  return anthropic_event("content_block_delta", {{"type", "content_block_delta"}, {"index", num_blocks_ - 1}, {"delta", d}});
}

std::string anthropic_shape::on_tool_piece(const json& piece) {
  std::string out;
  const json& fn = piece.value("function", json::object());
  if (piece.contains("id")) {
    call_index_ = piece.value("index", 0);
    out += open_block(block_kind::tool_use, {{"type", "tool_use"},
                                             {"id", tool_use_id(piece["id"].get<std::string>())},
                                             {"name", fn.value("name", "")},
                                             {"input", json::object()}});
  }
  const std::string arguments = fn.value("arguments", "");
  if (open_ == block_kind::tool_use && piece.value("index", 0) == call_index_ && !arguments.empty())
    out += delta({{"type", "input_json_delta"}, {"partial_json", arguments}});
  return out;
}

std::string anthropic_shape::on_chunk(const json& chunk) {
  std::string out = start_message();
  if (!chunk.contains("choices") || chunk["choices"].empty()) return out;
  const json& choice = chunk["choices"][0];
  const json& d = choice["delta"];
  if (is_text(d, "reasoning_content")) {
    out += open_block(block_kind::thinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
    out += delta({{"type", "thinking_delta"}, {"thinking", d["reasoning_content"]}});
  }
  if (is_text(d, "content")) {
    out += open_block(block_kind::text, {{"type", "text"}, {"text", ""}});
    out += delta({{"type", "text_delta"}, {"text", d["content"]}});
  }
  if (d.contains("tool_calls"))
    for (const auto& piece : d["tool_calls"]) out += on_tool_piece(piece);
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    stop_reason_ = anthropic_stop_reason(choice["finish_reason"].get<std::string>());
    if (const json s = choice.value("stop_reason", json()); s.is_string()) {
      stop_reason_ = "stop_sequence";
      stop_sequence_ = s;
    }
  }
  return out;
}

std::string anthropic_shape::on_stream_end(const json& usage) {
  std::string out = start_message() + close_block();
  out += anthropic_event("message_delta", {{"type", "message_delta"},
                                           {"delta", {{"stop_reason", stop_reason_}, {"stop_sequence", stop_sequence_}}},
                                           {"usage", anthropic_usage(usage)}});
  out += anthropic_event("message_stop", {{"type", "message_stop"}});
  return out;
}

std::string anthropic_shape::on_stream_error(const api_error& e) {
  return start_message() + anthropic_event("error", anthropic_error_body(e));
}

call_output anthropic_shape::on_response(const json& body) {
  return {200, dump_json(anthropic_message(body, id_, model_)), true};
}

call_output anthropic_shape::on_error(const api_error& e) { return {e.status, dump_json(anthropic_error_body(e)), true}; }

}  // namespace inflight::gateway
