// The one sampling pipeline: penalties -> logit_bias -> grammar mask -> greedy / draw.
#include "core/engine/sampling/logit_processors.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/engine/sampling/sampler.hpp"

using namespace inflight;

namespace {

std::vector<std::uint64_t> mask_of(std::size_t vocab, const std::set<token_id>& allowed) {
  std::vector<std::uint64_t> mask((vocab + 63) / 64, 0);
  for (token_id id : allowed) mask[static_cast<std::size_t>(id) >> 6] |= std::uint64_t{1} << (id & 63);
  return mask;
}

std::vector<float> random_row(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> row(n);
  for (float& x : row) x = dist(gen);
  return row;
}

std::set<token_id> drawn(std::span<const float> row, const sampling_params& p, std::span<const std::uint64_t> mask,
                         int n = 3000) {
  std::set<token_id> out;
  for (int i = 0; i < n; ++i) out.insert(sample(row, p, {}, 0, 11, static_cast<std::uint64_t>(i), mask).token);
  return out;
}

sampling_params greedy() {
  sampling_params p;
  p.temperature = 0.0f;
  return p;
}

}  // namespace

TEST_CASE("logit_bias moves the greedy arg-max, and -100 removes a token from draws", "[core][sampling]") {
  const std::vector<float> row = {1.0f, 2.0f, 3.0f, 0.5f};
  auto p = greedy();
  CHECK(sample(row, p, {}, 0, 1, 0).token == 2);
  p.logit_bias = {{0, 5.0f}};
  CHECK(sample(row, p, {}, 0, 1, 0).token == 0);
  p.logit_bias = {{2, -100.0f}, {99, 100.0f}};  // an id outside the row is ignored
  CHECK(sample(row, p, {}, 0, 1, 0).token == 1);

  sampling_params t;  // temperature 1 over a flat row: every token is drawn without bias
  const std::vector<float> flat(8, 0.0f);
  CHECK(drawn(flat, t, {}).size() == 8);
  t.logit_bias = {{3, -100.0f}, {5, -100.0f}};
  const auto got = drawn(flat, t, {});
  CHECK(got.size() == 6);
  CHECK(!got.contains(3));
  CHECK(!got.contains(5));
}

TEST_CASE("the grammar mask excludes tokens in greedy and in every sampling mode", "[core][sampling]") {
  const std::size_t vocab = 200;  // several mask words, the last one partial
  const auto row = random_row(vocab, 5);
  const std::set<token_id> allowed = {3, 64, 65, 130, 199};
  const auto mask = mask_of(vocab, allowed);

  auto g = greedy();
  const token_id best = static_cast<token_id>(std::max_element(row.begin(), row.end()) - row.begin());
  REQUIRE(!allowed.contains(best));  // the mask has to change the answer
  token_id best_allowed = *allowed.begin();
  for (token_id id : allowed)
    if (row[id] > row[best_allowed]) best_allowed = id;
  CHECK(sample(row, g, {}, 0, 1, 0).token == best);
  CHECK(sample(row, g, {}, 0, 1, 0, mask).token == best_allowed);

  std::vector<sampling_params> modes(5);
  modes[1].top_k = 50;
  modes[2].top_p = 0.9f;
  modes[3].min_p = 0.01f;
  modes[4].temperature = 3.0f;
  modes[4].top_k = 3;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    INFO("mode " << m);
    modes[m].temperature = std::max(modes[m].temperature, 1.0f) * 2.0f;  // flatter: more tokens drawn
    const auto without = drawn(row, modes[m], {});
    const auto with = drawn(row, modes[m], mask);
    CHECK(!std::includes(allowed.begin(), allowed.end(), without.begin(), without.end()));
    CHECK(std::includes(allowed.begin(), allowed.end(), with.begin(), with.end()));
    CHECK(with.size() >= 2);  // still a draw, not a forced token
  }
}

TEST_CASE("processors apply in order: penalties, then logit_bias, then the mask", "[core][sampling]") {
  // Token 0 is in the history. Repetition penalty 2 then bias +0.5: 2.0 / 2 + 0.5 = 1.5 > 1.4
  // (token 1). Bias first would give (2.0 + 0.5) / 2 = 1.25 < 1.4.
  const std::vector<float> row = {2.0f, 1.4f, 0.0f, -1.0f};
  const std::vector<token_id> history = {0};
  auto p = greedy();
  p.repetition_penalty = 2.0f;
  CHECK(sample(row, p, history, 1, 1, 0).token == 1);
  p.logit_bias = {{0, 0.5f}};
  CHECK(sample(row, p, history, 1, 1, 0).token == 0);
  std::vector<float> processed = row;
  apply_logit_processors(processed, p, history, 1, {});
  CHECK(processed[0] == Approx(1.5f));
  CHECK(processed[1] == Approx(1.4f));

  // The mask comes last: a +100 bias cannot bring a disallowed token back.
  p.logit_bias = {{2, 100.0f}};
  const auto mask = mask_of(row.size(), {1, 2, 3});
  CHECK(sample(row, p, history, 1, 1, 0, mask).token == 2);
  const auto mask_without_2 = mask_of(row.size(), {1, 3});
  CHECK(sample(row, p, history, 1, 1, 0, mask_without_2).token == 1);
  processed = row;
  apply_logit_processors(processed, p, history, 1, mask_without_2);
  CHECK(std::isinf(processed[2]));
  CHECK(processed[2] < 0.0f);
}

TEST_CASE("apply_token_mask: clear bits and ids past the mask's words become -inf", "[core][sampling]") {
  std::vector<float> row(150, 1.0f);
  const auto mask = mask_of(128, {0, 63, 64, 127});  // two words: ids 128.. are not covered
  apply_token_mask(row, mask);
  for (std::size_t i = 0; i < row.size(); ++i) {
    INFO("id " << i);
    const bool is_allowed = i == 0 || i == 63 || i == 64 || i == 127;
    CHECK((row[i] == 1.0f) == is_allowed);
    if (!is_allowed) CHECK(row[i] == -std::numeric_limits<float>::infinity());
  }
  std::vector<float> untouched(10, 2.0f);
  apply_token_mask(untouched, {});
  CHECK(untouched == std::vector<float>(10, 2.0f));
}

TEST_CASE("logprobs stay those of the raw logits under bias and mask", "[core][sampling]") {
  const auto row = random_row(100, 9);
  double z = 0.0;
  for (float x : row) z += std::exp(double(x));
  sampling_params p;
  p.logprobs = 3;
  p.logit_bias = {{7, 4.0f}};
  const auto mask = mask_of(row.size(), {7, 8, 9});
  for (std::uint64_t i = 0; i < 50; ++i) {
    const auto t = sample(row, p, {}, 0, 3, i, mask);
    REQUIRE((t.token >= 7 && t.token <= 9));
    CHECK(t.logprob == Approx(row[t.token] - std::log(z)).margin(1e-4));
    REQUIRE(t.top_logprobs.size() == 3);  // the model's top 3, whatever the mask allows
    const auto top = static_cast<token_id>(std::max_element(row.begin(), row.end()) - row.begin());
    CHECK(t.top_logprobs[0].token == top);
  }
}

TEST_CASE("a mask that allows nothing yields id 0 in every mode, without NaNs", "[core][sampling]") {
  const auto row = random_row(70, 2);
  const std::vector<std::uint64_t> none(2, 0);
  for (float temperature : {0.0f, 1.0f}) {
    sampling_params p;
    p.temperature = temperature;
    p.top_p = 0.5f;
    const auto t = sample(row, p, {}, 0, 1, 0, none);
    CHECK(t.token == 0);
    CHECK(std::isfinite(t.logprob));
  }
}

TEST_CASE("sample(row, seq_step) is the pipeline over the step's fields, and is_raw_greedy says when to skip it", "[core][sampling]") {
  const auto row = random_row(90, 4);
  seq_step s;
  s.params.temperature = 0.7f;
  s.params.presence_penalty = 0.5f;
  s.params.logit_bias = {{4, 2.0f}};
  s.history = {1, 4, 4};
  s.num_prompt_tokens = 1;
  s.seed = 42;
  s.sample_index = 3;
  s.allowed_tokens = mask_of(row.size(), {2, 4, 6, 80});
  for (std::uint64_t i = 0; i < 20; ++i) {
    s.sample_index = i;
    const auto a = sample(row, s);
    const auto b = sample(row, s.params, s.history, s.num_prompt_tokens, s.seed, i, s.allowed_tokens);
    CHECK(a.token == b.token);
    CHECK((a.token == 2 || a.token == 4 || a.token == 6 || a.token == 80));
  }

  seq_step plain;
  plain.params.temperature = 0.0f;
  CHECK(is_raw_greedy(plain));
  auto biased = plain;
  biased.params.logit_bias = {{1, 1.0f}};
  CHECK(!is_raw_greedy(biased));
  auto masked = plain;
  masked.allowed_tokens = {1};
  CHECK(!is_raw_greedy(masked));
  auto penalised = plain;
  penalised.params.frequency_penalty = 0.1f;
  CHECK(!is_raw_greedy(penalised));
  auto with_logprobs = plain;
  with_logprobs.params.logprobs = 1;
  CHECK(!is_raw_greedy(with_logprobs));
  auto drawn_row = plain;
  drawn_row.params.temperature = 1.0f;
  CHECK(!is_raw_greedy(drawn_row));

  // is_masked_greedy: the rows a backend may sample where its logits are, given the mask.
  CHECK(is_masked_greedy(masked));
  CHECK(!is_masked_greedy(plain));  // no mask: raw greedy
  for (auto other : {biased, penalised, with_logprobs, drawn_row}) {
    other.allowed_tokens = {1};
    CHECK(!is_masked_greedy(other));
  }
  // What such a backend must reproduce: the arg-max among the allowed tokens (ties to the
  // lowest id), the unmasked row's logprob, token 0 when nothing is allowed.
  const auto wide = random_row(300, 9);
  auto under_mask = plain;
  under_mask.allowed_tokens = mask_of(wide.size(), {7, 130, 131, 299});
  const auto got = sample(wide, under_mask);
  token_id want = 7;
  for (token_id id : {130, 131, 299})
    if (wide[std::size_t(id)] > wide[std::size_t(want)]) want = id;
  CHECK(got.token == want);
  double total = 0.0;
  const float top = *std::max_element(wide.begin(), wide.end());
  for (float v : wide) total += std::exp(double(v - top));
  CHECK(got.logprob == Approx(wide[std::size_t(want)] - top - std::log(total)).margin(1e-5));
  under_mask.allowed_tokens = {0, 0};  // nothing allowed, and shorter than the row
  CHECK(sample(wide, under_mask).token == 0);
}

TEST_CASE("try_validate checks logit_bias entries", "[core][sampling]") {
  sampling_params p;
  p.logit_bias = {{5, 100.0f}, {6, -100.0f}};
  CHECK(try_validate(p).has_value());
  p.logit_bias = {{5, 100.5f}};
  CHECK(!try_validate(p).has_value());
  p.logit_bias = {{-1, 1.0f}};
  CHECK(!try_validate(p).has_value());
  p.logit_bias = {{1, std::numeric_limits<float>::quiet_NaN()}};
  CHECK(!try_validate(p).has_value());
}

TEST_CASE("greedy_allowed_token equals arg-max over the masked copy on random rows and masks", "[core][sampling]") {
  std::mt19937_64 rng(11);
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t n = 1 + rng() % 300;
    std::vector<float> logits(n);
    for (auto& x : logits) {
      const auto r = rng() % 10;
      x = r == 0 ? neg_inf : float(int(rng() % 7) - 3);  // few distinct values: many ties
    }
    // Masks shorter than, as long as, or longer than the row; words empty, full or mixed.
    const std::size_t words = std::max<std::size_t>(1, (n + 63) / 64 + (rng() % 3) - 1);
    std::vector<std::uint64_t> mask(words);
    for (auto& w : mask) {
      const auto kind = rng() % 4;
      w = kind == 0 ? 0 : kind == 1 ? ~std::uint64_t{0} : rng() & rng();
    }
    std::vector<float> copy = logits;
    apply_token_mask(copy, mask);
    const float best = *std::max_element(copy.begin(), copy.end());
    const auto expected = best == neg_inf ? 0 : token_id(std::find(copy.begin(), copy.end(), best) - copy.begin());
    INFO("trial " << trial << ", n " << n << ", words " << words);
    REQUIRE(greedy_allowed_token(logits, mask) == expected);
    // And sample() takes it for a greedy request under that mask alone.
    sampling_params p;
    p.temperature = 0.0f;
    CHECK(sample(logits, p, {}, 0, 1, 0, mask).token == expected);
  }
}
