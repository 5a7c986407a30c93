#include "core/engine/spec/ngram_drafter.hpp"

#include <algorithm>

namespace inflight {

std::vector<token_id> ngram_draft(std::span<const token_id> tokens, int k, const ngram_settings& s) {
  const auto size = static_cast<std::ptrdiff_t>(tokens.size());
  if (k <= 0 || s.min_n < 1) return {};
  for (std::ptrdiff_t n = std::min<std::ptrdiff_t>(s.max_n, size - 1); n >= s.min_n; --n) {
    const auto suffix = tokens.subspan(static_cast<std::size_t>(size - n));
    // The latest earlier occurrence: starts before size - n (never the suffix itself).
    for (std::ptrdiff_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      // What followed it, copied on past the sequence's end as the repeat goes on (an
      // overlapping copy: a loop of period p drafts k tokens, not p).
      const std::ptrdiff_t from = start + n, period = size - from;
      std::vector<token_id> out;
      for (std::ptrdiff_t i = 0; i < k; ++i) out.push_back(i < period ? tokens[std::size_t(from + i)] : out[std::size_t(i - period)]);
      return out;
    }
  }
  return {};
}

}  // namespace inflight
