#pragma once
/// Another API's shape over a chat call. The Responses and Messages APIs run the one
/// completion path as a chat completion (completion_call) and reshape what it would send:
/// each chat.completion.chunk of a stream, its end, the whole chat.completion body of a
/// call that does not stream, and the errors of both.
///
/// The chunks a shape sees: the first carries delta.role; then deltas with
/// `reasoning_content` (a thinking model's reasoning, `reasoning` beside it), `content`,
/// or `tool_calls` pieces (the first piece of a call has its id and name); the last of a
/// choice has finish_reason. Streams always end with on_stream_end(usage).

#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/gateway_call.hpp"

namespace inflight::gateway {

class output_shape {
 public:
  virtual ~output_shape() = default;
  /// A streaming chat.completion.chunk; returns the bytes to send instead ("" = none).
  virtual std::string on_chunk(const nlohmann::json& chunk) = 0;
  /// The end of a stream (`usage` as usage_json writes it); the last bytes sent.
  virtual std::string on_stream_end(const nlohmann::json& usage) = 0;
  /// An error after a stream has started; the last bytes sent.
  virtual std::string on_stream_error(const api_error& e) = 0;
  /// The chat.completion body of a call that does not stream: the response instead.
  virtual call_output on_response(const nlohmann::json& body) = 0;
  /// The error of a call that does not stream (or of one refused before it started).
  virtual call_output on_error(const api_error& e) = 0;
};

}  // namespace inflight::gateway
