#pragma once
/// One streamed chat choice whose output is read for tool calls: generated text in,
/// chat.completion.chunk objects out (content deltas, then each call's pieces: the first
/// with id, type and name, later ones pieces of its arguments; last the finish reason,
/// "tool_calls" once whole calls were sent). Pure: no engine, no socket.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/openai_response.hpp"
#include "core/api/tool_call_stream.hpp"

namespace inflight::gateway {

class tool_chunk_writer {
 public:
  tool_chunk_writer(tool_call_format format, response_meta meta, int index)
      : stream_(format), meta_(std::move(meta)), index_(index) {}

  /// Chunks for newly generated text; `logprobs` (chat content entries or null) ride on
  /// a content chunk.
  std::vector<nlohmann::json> push(const std::string& text, const nlohmann::json& logprobs);
  /// The held text, then the chunk with the finish reason (the engine's, or "tool_calls").
  std::vector<nlohmann::json> finish(const char* finish_reason);

 private:
  void append(std::vector<nlohmann::json>& out, const tool_call_stream::delta& d, const nlohmann::json& logprobs);

  tool_call_stream stream_;
  response_meta meta_;
  int index_ = 0;
};

}  // namespace inflight::gateway
