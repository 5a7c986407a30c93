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
      const std::ptrdiff_t from = start + n;
      const std::ptrdiff_t to = std::min<std::ptrdiff_t>(from + k, size);
      return {tokens.begin() + from, tokens.begin() + to};
    }
  }
  return {};
}

}  // namespace inflight
