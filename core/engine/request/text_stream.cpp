#include "core/engine/request/text_stream.hpp"

#include <algorithm>

namespace inflight {
namespace {

/// Largest n <= limit such that s[0, n) ends on a UTF-8 character boundary.
std::size_t boundary_at_or_before(const std::string& s, std::size_t limit) {
  std::size_t n = std::min(limit, s.size());
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

text_stream::text_stream(const tokenizer& tok, std::vector<std::string> stop_strings, token_id prev)
    : decoder_(tok, prev), stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stops_) max_stop_len_ = std::max(max_stop_len_, s.size());
}

text_stream::delta text_stream::push(token_id token) {
  if (is_stopped_) return {"", true, {}};
  held_ += decoder_.push(token);
  return release(false);
}

std::string text_stream::finish() {
  if (is_stopped_) return "";
  held_ += decoder_.flush();
  return release(true).text;
}

text_stream::delta text_stream::release(bool at_end) {
  // The earliest stop string occurrence wins (at one place, the first listed).
  std::size_t cut = std::string::npos;
  const std::string* matched = nullptr;
  for (const auto& s : stops_) {
    if (const auto at = held_.find(s); at < cut) {
      cut = at;
      matched = &s;
    }
  }
  delta out;
  if (cut != std::string::npos) {
    out.text = held_.substr(0, cut);
    out.stop = *matched;
    out.is_stopped = is_stopped_ = true;
    held_.clear();
  } else {
    // Keep the last max_stop_len - 1 bytes: they may begin a stop string.
    const std::size_t keep = at_end || max_stop_len_ == 0 ? 0 : max_stop_len_ - 1;
    const std::size_t n = held_.size() > keep ? boundary_at_or_before(held_, held_.size() - keep) : 0;
    out.text = held_.substr(0, n);
    held_.erase(0, n);
  }
  released_ += out.text;
  return out;
}

}  // namespace inflight
