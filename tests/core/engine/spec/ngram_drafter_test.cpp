// Prompt lookup (core/engine/spec/ngram_drafter): the draft is what followed the latest
// earlier occurrence of the sequence's longest matching suffix.
#include <catch2/catch.hpp>

#include "core/engine/spec/ngram_drafter.hpp"

using namespace inflight;

namespace {

std::vector<token_id> draft(std::vector<token_id> tokens, int k, ngram_settings s = {}) {
  return ngram_draft(tokens, k, s);
}

}  // namespace

TEST_CASE("ngram drafter: what followed the suffix's latest earlier occurrence, at most k tokens", "[core][spec]") {
  // ... 1 2 3 [7 8 9] ... 1 2 3 | -> 7 8 9
  CHECK(draft({1, 2, 3, 7, 8, 9, 5, 1, 2, 3}, 3) == std::vector<token_id>{7, 8, 9});
  CHECK(draft({1, 2, 3, 7, 8, 9, 5, 1, 2, 3}, 2) == std::vector<token_id>{7, 8});
  // Past the sequence's end the repeat goes on: "4 5" was followed by "6 4 5", and so on.
  CHECK(draft({4, 5, 6, 4, 5}, 5) == std::vector<token_id>{6, 4, 5, 6, 4});
  // The latest occurrence wins: 2 was followed by 3 first, by 9 later.
  CHECK(draft({2, 3, 0, 2, 9, 0, 2}, 1, {1, 1}) == std::vector<token_id>{9});
  // The longest suffix wins over a later, shorter match: "1 2" -> 5, though "2" alone -> 6 later.
  CHECK(draft({1, 2, 5, 0, 2, 6, 0, 1, 2}, 1, {1, 2}) == std::vector<token_id>{5});
  CHECK(draft({1, 2, 5, 0, 2, 6, 0, 1, 2}, 1, {1, 1}) == std::vector<token_id>{6});
}

TEST_CASE("ngram drafter: no occurrence, no draft", "[core][spec]") {
  CHECK(draft({1, 2, 3, 4}, 4).empty());  // nothing repeats
  CHECK(draft({7}, 4).empty());
  CHECK(draft({}, 4).empty());
  CHECK(draft({1, 1, 1}, 0).empty());     // k = 0
  // min_n above every repeat: "3" repeats but no pair does.
  CHECK(draft({3, 1, 2, 3}, 2, {2, 3}).empty());
  CHECK(draft({3, 1, 2, 3}, 2, {1, 3}) == std::vector<token_id>{1, 2});
  // A run of one token drafts more of it, k of them (the suffix never matches itself).
  CHECK(draft({5, 5, 5}, 4, {1, 2}) == std::vector<token_id>{5, 5, 5, 5});
  CHECK(draft({1, 2, 7, 1, 2}, 6, {2, 2}) == std::vector<token_id>{7, 1, 2, 7, 1, 2});
}
