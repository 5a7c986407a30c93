#include "core/model/tokenizer/tokenizer.hpp"
#include "core/model/tokenizer/utf8.hpp"

namespace inflight {

std::string incremental_decoder::push(token_id token) {
  pending_ += tok_->token_bytes(prev_, token);
  prev_ = token;
  // Invalid bytes count as complete, so only a genuinely unfinished character waits.
  const std::size_t num_ready = complete_utf8_prefix(pending_);
  std::string out = to_valid_utf8(std::string_view(pending_).substr(0, num_ready));
  pending_.erase(0, num_ready);
  return out;
}

std::string incremental_decoder::flush() {
  std::string out = to_valid_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace inflight
