#include "actors/gateway/tool_chunks.hpp"

namespace inflight::gateway {

using nlohmann::json;

void tool_chunk_writer::append(std::vector<json>& out, const tool_call_stream::delta& d, const json& logprobs) {
  if (!d.content.empty() || !logprobs.is_null()) {
    const json delta = d.content.empty() ? json::object() : json{{"content", d.content}};
    const json chat_lp = logprobs.is_null() ? json(nullptr) : json{{"content", logprobs}};
    out.push_back(chat_chunk(meta_, index_, delta, chat_lp, nullptr));
  }
  for (const auto& piece : d.calls) {
    const std::string id = piece.name ? make_response_id("call_") : std::string();
    out.push_back(chat_chunk(meta_, index_, tool_call_delta(piece.index, id, piece.name, piece.arguments), nullptr,
                             nullptr));
  }
}

std::vector<json> tool_chunk_writer::push(const std::string& text, const json& logprobs) {
  std::vector<json> out;
  append(out, stream_.push(text), logprobs);
  return out;
}

std::vector<json> tool_chunk_writer::finish(const char* finish_reason) {
  std::vector<json> out;
  append(out, stream_.finish(), nullptr);
  const bool is_call = stream_.num_calls() > 0 && !stream_.has_incomplete_call();
  out.push_back(chat_chunk(meta_, index_, json::object(), nullptr, is_call ? "tool_calls" : finish_reason));
  return out;
}

}  // namespace inflight::gateway
