#pragma once
/// The Anthropic Messages API's answers over a chat call: the message body, its SSE
/// events and its errors.
///
/// A message: {id: "msg_...", type: "message", role: "assistant", model, content: [
///   {type: "thinking", thinking, signature: ""}   the reasoning, when the model wrote some
///   {type: "text", text}                          the answer, when not empty
///   {type: "tool_use", id: "toolu_...", name, input}  each tool call, input parsed
/// ], stop_reason (stop_sequence when one of stop_sequences matched), stop_sequence (the one
/// that matched, else null), usage: {input_tokens, output_tokens,
/// cache_read_input_tokens, cache_creation_input_tokens}}.
///
/// A stream: message_start (content empty), ping, then per block content_block_start,
/// content_block_delta (thinking_delta, text_delta or input_json_delta; a thinking block
/// ends with a signature_delta), content_block_stop, with indexes 0, 1, ...; last
/// message_delta (stop_reason, usage) and message_stop. A failure after the start is an
/// `error` event. Every event has its `event:` line (the SDKs read events by it).

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/http_reply.hpp"
#include "actors/gateway/output_shape.hpp"

namespace inflight::gateway {

/// Anthropic's error type for an HTTP status: invalid_request_error (400, 405, 409, 422,
/// 431), authentication_error (401), permission_error (403), not_found_error (404),
/// request_too_large (413), rate_limit_error (429), overloaded_error (503), timeout_error
/// (504), api_error (the rest).
std::string_view anthropic_error_type(int status);
/// {"type": "error", "error": {"type", "message"}}.
nlohmann::json anthropic_error_body(const api_error& e);
/// The error as a whole HTTP answer (the same status).
http_reply anthropic_error_reply(const api_error& e);

/// The stop_reason of a chat finish_reason: stop -> end_turn, length -> max_tokens,
/// tool_calls -> tool_use; any other (abort) -> end_turn.
std::string_view anthropic_stop_reason(std::string_view finish_reason);
/// Anthropic usage of a chat usage: input_tokens are the prompt tokens not read from the
/// prefix cache, cache_read_input_tokens those that were.
nlohmann::json anthropic_usage(const nlohmann::json& usage);
/// The tool_use id of a chat tool call id ("call_<hex>" -> "toolu_<hex>").
std::string tool_use_id(std::string_view call_id);
/// The message of a chat.completion body (its first choice).
nlohmann::ordered_json anthropic_message(const nlohmann::json& chat_body, const std::string& id, const std::string& model);

/// `event: <name>\ndata: <json>\n\n`.
std::string anthropic_event(std::string_view name, const nlohmann::json& data);

class anthropic_shape final : public output_shape {
 public:
  /// `num_prompt_tokens`: the input_tokens message_start reports (the final count, with
  /// the prefix cache's share, comes in message_delta).
  anthropic_shape(std::string model, int num_prompt_tokens);

  std::string on_chunk(const nlohmann::json& chunk) override;
  std::string on_stream_end(const nlohmann::json& usage) override;
  std::string on_stream_error(const api_error& e) override;
  call_output on_response(const nlohmann::json& body) override;
  call_output on_error(const api_error& e) override;

 private:
  enum class block_kind { none, thinking, text, tool_use };

  std::string start_message();
  /// Opens a block of `kind` (closing the open one) unless one of that kind is open.
  std::string open_block(block_kind kind, const nlohmann::json& content_block);
  std::string close_block();
  std::string delta(const nlohmann::json& d) const;
  std::string on_tool_piece(const nlohmann::json& piece);

  std::string id_;
  std::string model_;
  int num_prompt_tokens_ = 0;
  bool has_started_ = false;
  block_kind open_ = block_kind::none;
  int num_blocks_ = 0;   ///< blocks opened so far: the open one is num_blocks_ - 1
  int call_index_ = -1;  ///< the chat tool call of the open tool_use block
  std::string stop_reason_ = "end_turn";
  nlohmann::json stop_sequence_ = nullptr;  ///< the stop sequence that matched, or null
};

}  // namespace inflight::gateway
