// Checking drafts (core/engine/spec/draft_verify): greedy keeps exactly the greedy
// output; speculative sampling keeps the target's distribution for every drafter,
// checked by counting draws against the distribution itself.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <map>

#include "core/engine/spec/draft_verify.hpp"

using namespace inflight;

TEST_CASE("draft verify, greedy: drafted tokens are kept while they are the argmax", "[core][spec]") {
  const std::vector<std::vector<float>> rows = {{0.1f, 0.7f, 0.2f}, {0.5f, 0.2f, 0.3f}, {0.2f, 0.2f, 0.6f}};
  // Right, right: both kept, the bonus is the last row's argmax.
  auto v = verify_greedy(std::vector<token_id>{1, 0}, rows);
  CHECK(v.num_accepted == 2);
  CHECK(v.next == 2);
  // Right, wrong: one kept, then the target's own choice where the draft went wrong.
  v = verify_greedy(std::vector<token_id>{1, 2}, std::span(rows));
  CHECK(v.num_accepted == 1);
  CHECK(v.next == 0);
  // Wrong at once: nothing kept; an empty draft is one greedy step.
  v = verify_greedy(std::vector<token_id>{2, 0}, rows);
  CHECK(v.num_accepted == 0);
  CHECK(v.next == 1);
  v = verify_greedy(std::vector<token_id>{}, std::span(rows).first(1));
  CHECK(v.num_accepted == 0);
  CHECK(v.next == 1);
  // Ties go to the lowest id, as the greedy sampler breaks them.
  const std::vector<std::vector<float>> tie = {{0.4f, 0.4f, 0.2f}, {1.0f, 0.0f, 0.0f}};
  CHECK(verify_greedy(std::vector<token_id>{1}, tie).num_accepted == 0);
  CHECK(verify_greedy(std::vector<token_id>{0}, tie).num_accepted == 1);
}

TEST_CASE("draft verify, sampled: every emitted token keeps the target's distribution, whatever was drafted",
          "[core][spec]") {
  // Two positions over four tokens. Count the first two emitted tokens (the kept draft,
  // then the correction or the next draw) over many draws, for a draft that is likely,
  // unlikely and impossible, and compare with p0 and p1 (rows independent of the
  // prefix here, so the joint is p0(a) p1(b)).
  const std::vector<float> p0 = {0.5f, 0.2f, 0.2f, 0.1f};
  const std::vector<float> p1 = {0.1f, 0.1f, 0.3f, 0.5f};
  const std::vector<float> p2 = {0.25f, 0.25f, 0.25f, 0.25f};
  const std::vector<std::vector<float>> probs = {p0, p1, p2};
  constexpr int num_draws = 200'000;
  for (const auto& drafted : std::vector<std::vector<token_id>>{{0, 3}, {1, 2}, {3, 0}, {2, 1}}) {
    INFO("draft " << drafted[0] << " " << drafted[1]);
    std::map<std::pair<token_id, token_id>, int> joint;
    int num_kept = 0;
    for (int i = 0; i < num_draws; ++i) {
      counter_rng rng(7, std::uint64_t(i));
      const auto v = verify_sampled(drafted, probs, rng);
      num_kept += v.num_accepted;
      token_id first = v.num_accepted >= 1 ? drafted[0] : v.next;
      token_id second = -1;
      if (v.num_accepted >= 2) second = drafted[1];
      else if (v.num_accepted == 1) second = v.next;
      else {  // the second token comes from the next step: a fresh draw from p1
        counter_rng again(8, std::uint64_t(i));
        second = verify_sampled(std::vector<token_id>{}, std::span(probs).subspan(1, 1), again).next;
      }
      ++joint[{first, second}];
    }
    // Each cell within 5 standard deviations of its expectation (a biased rule, e.g. a
    // rejection that may redraw the refused token, moves a cell by hundreds of them).
    for (token_id a = 0; a < 4; ++a) {
      for (token_id b = 0; b < 4; ++b) {
        const double p = double(p0[a]) * p1[b];
        const double expected = p * num_draws;
        const double sd = std::sqrt(num_draws * p * (1 - p));
        INFO("tokens " << a << " " << b);
        CHECK(std::abs(joint[{a, b}] - expected) < 5 * sd);
      }
    }
    // The kept share is the drafter's luck: p0(x0) + p0(x0) p1(x1) tokens per draft.
    const double kept_expected = num_draws * (p0[drafted[0]] * (1.0 + p1[drafted[1]]));
    CHECK(std::abs(num_kept - kept_expected) < 0.02 * num_draws);
  }
}

TEST_CASE("draft verify, sampled: a draft of certain tokens is always kept, an impossible one never", "[core][spec]") {
  const std::vector<std::vector<float>> certain = {{0, 1, 0}, {0, 0, 1}, {1, 0, 0}};
  for (std::uint64_t i = 0; i < 100; ++i) {
    counter_rng rng(1, i);
    const auto v = verify_sampled(std::vector<token_id>{1, 2}, certain, rng);
    CHECK(v.num_accepted == 2);
    CHECK(v.next == 0);
    counter_rng rng2(2, i);
    const auto w = verify_sampled(std::vector<token_id>{0, 2}, certain, rng2);
    CHECK(w.num_accepted == 0);
    CHECK(w.next == 1);  // the target's only token
  }
}
