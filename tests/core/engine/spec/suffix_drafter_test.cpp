// The suffix drafter (core/engine/spec/suffix_drafter): the sequence's own history
// first, then the recent finished sequences, within the corpus bounds.
#include <catch2/catch.hpp>

#include "core/engine/spec/suffix_drafter.hpp"

using namespace inflight;

namespace {

std::vector<token_id> propose(drafter& d, std::vector<token_id> tokens, int k) { return d.propose(1, tokens, k); }

}  // namespace

TEST_CASE("suffix drafter: a finished sequence's continuation drafts for a new one", "[core][spec]") {
  suffix_drafter d({.ngram = {1, 3}});
  // A tool call an earlier request made: "call get_weather ( city = Oslo )" as ids.
  const std::vector<token_id> earlier = {50, 60, 70, 10, 11, 12, 13, 14, 15, 99};
  CHECK(propose(d, {1, 2, 10, 11, 12}, 4).empty());  // nothing finished yet, no repeat inside
  d.on_finished(earlier);
  CHECK(d.num_sequences() == 1);
  CHECK(propose(d, {1, 2, 10, 11, 12}, 4) == std::vector<token_id>{13, 14, 15, 99});
  CHECK(propose(d, {1, 2, 10, 11, 12}, 2) == std::vector<token_id>{13, 14});
  // Its own history comes first: 11 12 was followed by 7 in this very sequence.
  CHECK(propose(d, {11, 12, 7, 10, 11, 12}, 2) == std::vector<token_id>{7, 10});
  // The latest finished sequence wins.
  d.on_finished(std::vector<token_id>{10, 11, 12, 42, 43});
  CHECK(propose(d, {1, 2, 10, 11, 12}, 3) == std::vector<token_id>{42, 43});
  // A suffix that ends a finished sequence has nothing after it there.
  CHECK(propose(d, {3, 42, 43, 0, 12, 42, 43}, 2) == std::vector<token_id>{0, 12});  // own history
  CHECK(propose(d, {5, 12, 42, 43}, 2).empty());
}

TEST_CASE("suffix drafter: the corpus keeps the latest sequences within its bounds", "[core][spec]") {
  suffix_drafter d({.ngram = {2, 2}, .max_sequences = 2, .max_tokens = 12});
  d.on_finished(std::vector<token_id>{1, 2, 3});
  d.on_finished(std::vector<token_id>{4, 5, 6});
  CHECK(propose(d, {9, 1, 2}, 1) == std::vector<token_id>{3});
  d.on_finished(std::vector<token_id>{7, 8, 9});  // the first leaves (two sequences at most)
  CHECK(d.num_sequences() == 2);
  CHECK(propose(d, {9, 1, 2}, 1).empty());
  CHECK(propose(d, {0, 4, 5}, 1) == std::vector<token_id>{6});
  d.on_finished(std::vector<token_id>{20, 21, 22, 23, 24, 25, 26, 27, 28});  // 9 tokens: the rest must leave
  CHECK(d.num_tokens() <= 12);
  CHECK(propose(d, {0, 4, 5}, 1).empty());
  CHECK(propose(d, {0, 21, 22}, 2) == std::vector<token_id>{23, 24});
  d.on_finished(std::vector<token_id>(13, 1));  // longer than the whole corpus: not kept
  CHECK(propose(d, {0, 21, 22}, 2) == std::vector<token_id>{23, 24});
}

TEST_CASE("suffix drafter: the index stays within twice the corpus's n-grams however long the server runs",
          "[core][spec]") {
  suffix_drafter d({.ngram = {2, 2}, .max_sequences = 8});
  // The same common text ends every request (its n-grams' place lists grow longest),
  // then one thing of its own.
  for (int i = 0; i < 5000; ++i) {
    std::vector<token_id> tokens = {1, 2, 3, 1, 2, 3, 1, 2, 3, 100 + i % 1000, 7};
    d.on_finished(tokens);
    CHECK(d.num_sequences() <= 8);
    CHECK(d.num_places() <= 2 * 8 * 9 + 1024);
  }
  // Only the last 8 are there: 4999 % 1000 = 999 ... 992 drafts, 991 does not.
  CHECK(propose(d, {0, 3, 1099}, 1) == std::vector<token_id>{7});
  CHECK(propose(d, {0, 3, 1092}, 1) == std::vector<token_id>{7});
  CHECK(propose(d, {0, 3, 1091}, 1).empty());
}

TEST_CASE("drafters by name", "[core][spec]") {
  CHECK(try_make_drafter("ngram").has_value());
  CHECK(try_make_drafter("suffix").has_value());
  auto bad = try_make_drafter("eagle");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message ==
        "unknown speculative method 'eagle' (built in: ngram, suffix, draft; or a drafter plugin: none of that name)");
}
