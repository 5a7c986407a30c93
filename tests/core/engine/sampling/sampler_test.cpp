#include "core/engine/sampling/sampler.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "core/engine/sampling/rng.hpp"
#include "core/engine/sampling/row_math.hpp"

using namespace inflight;

namespace {

sampling_params with_temperature(float t) {
  sampling_params p;
  p.temperature = t;
  return p;
}

/// Draw counts per token over `n` consecutive sample indices of one seed.
std::map<token_id, int> draw_counts(std::span<const float> logits, const sampling_params& p, int n,
                                    std::uint64_t seed = 7) {
  std::map<token_id, int> counts;
  for (int i = 0; i < n; ++i) counts[sample(logits, p, {}, 0, seed, static_cast<std::uint64_t>(i)).token] += 1;
  return counts;
}

std::set<token_id> drawn_set(std::span<const float> logits, const sampling_params& p, int n = 4000) {
  std::set<token_id> out;
  for (const auto& [token, count] : draw_counts(logits, p, n)) out.insert(token);
  return out;
}

std::vector<double> softmax(std::span<const float> logits, double temperature) {
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double z = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) z += p[i] = std::exp((logits[i] - top) / temperature);
  for (double& x : p) x /= z;
  return p;
}

std::vector<float> random_row(std::size_t n, float stddev, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> row(n);
  for (float& x : row) x = dist(gen);
  return row;
}

}  // namespace

TEST_CASE("fast_exp matches std::exp and maps -inf to 0", "[core][sampling]") {
  for (float x = -87.0f; x <= 10.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    CHECK(std::abs(row_math::fast_exp(x) - want) <= 3e-7 * want);
  }
  CHECK(row_math::fast_exp(0.0f) == 1.0f);
  CHECK(row_math::fast_exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(row_math::fast_exp(-100.0f) == 0.0f);
}

TEST_CASE("greedy picks the max, and the lowest id on ties", "[core][sampling]") {
  const std::vector<float> row{1.0f, 3.0f, -2.0f, 3.0f, 2.5f};
  const auto p = with_temperature(0.0f);
  CHECK(sample(row, p, {}, 0, 1, 0).token == 1);
  CHECK(sample(std::vector<float>{-5.0f, -1.0f, -1.0f}, p, {}, 0, 1, 0).token == 1);
  const auto big = random_row(50'000, 3.0f, 11);
  const auto want = std::max_element(big.begin(), big.end()) - big.begin();
  for (std::uint64_t i = 0; i < 5; ++i) CHECK(sample(big, p, {}, 0, i, i).token == want);
}

TEST_CASE("temperature draws follow softmax(logits / T)", "[core][sampling]") {
  const std::vector<float> row{0.0f, 1.0f, 2.0f, -1.0f, 0.5f};
  for (float t : {0.7f, 1.0f, 2.0f}) {
    const int n = 100'000;
    const auto counts = draw_counts(row, with_temperature(t), n, 1234);
    const auto want = softmax(row, t);
    double chi2 = 0.0;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const double expected = want[i] * n;
      const double got = counts.contains(static_cast<token_id>(i)) ? counts.at(static_cast<token_id>(i)) : 0;
      chi2 += (got - expected) * (got - expected) / expected;
    }
    INFO("T = " << t << ", chi2 = " << chi2);
    CHECK(chi2 < 25.0);  // 4 degrees of freedom: p < 5e-5 of a false failure
  }
}

TEST_CASE("top-k = 1 is greedy", "[core][sampling]") {
  sampling_params p = with_temperature(1.5f);
  p.top_k = 1;
  for (std::uint32_t s = 0; s < 20; ++s) {
    const auto row = random_row(3000, 1.0f, s);
    const auto want = std::max_element(row.begin(), row.end()) - row.begin();
    CHECK(sample(row, p, {}, 0, s, s).token == want);
  }
}

TEST_CASE("top-k = 2 never draws outside the top 2", "[core][sampling]") {
  sampling_params p = with_temperature(1.0f);
  p.top_k = 2;
  auto row = random_row(1000, 0.1f, 5);  // flat: without the cut almost every token shows up
  row[700] = 0.9f;
  row[42] = 0.9f + std::log(2.0f);
  const int n = 30'000;
  const auto counts = draw_counts(row, p, n);
  REQUIRE(counts.size() == 2);
  REQUIRE(counts.contains(42));
  // Renormalised over the two: 2/3 and 1/3.
  CHECK(std::abs(counts.at(42) / double(n) - 2.0 / 3.0) < 0.015);

  // k close to the vocab takes the nth_element path: the worst token is never drawn.
  const std::vector<float> small{0.5f, -3.0f, 0.2f, 0.1f};
  p.top_k = 3;
  CHECK(drawn_set(small, p) == std::set<token_id>{0, 2, 3});
}

TEST_CASE("top-p keeps the smallest set reaching p", "[core][sampling]") {
  // probabilities 0.25, 0.10, 0.50, 0.15 at ids 0..3
  const std::vector<float> row{std::log(0.25f), std::log(0.10f), std::log(0.50f), std::log(0.15f)};
  sampling_params p = with_temperature(1.0f);
  for (int top_k : {0, 4}) {
    INFO("top_k = " << top_k);
    p.top_k = top_k;
    p.top_p = 0.3f;
    CHECK(drawn_set(row, p) == std::set<token_id>{2});
    p.top_p = 0.7f;  // 0.5 + 0.25 = 0.75 >= 0.7
    CHECK(drawn_set(row, p) == std::set<token_id>{0, 2});
    p.top_p = 0.8f;  // 0.75 < 0.8: the 0.15 joins
    CHECK(drawn_set(row, p) == std::set<token_id>{0, 2, 3});
  }
  // After top-k = 3 the mass is renormalised over 0.9: 0.75 / 0.9 = 0.83.
  p.top_k = 3;
  p.top_p = 0.8f;
  CHECK(drawn_set(row, p) == std::set<token_id>{0, 2});
  p.top_p = 0.85f;
  CHECK(drawn_set(row, p) == std::set<token_id>{0, 2, 3});
  // Ties are ranked by id: half of four equal tokens is ids 0 and 1.
  const std::vector<float> flat{1.0f, 1.0f, 1.0f, 1.0f};
  p.top_k = 0;
  p.top_p = 0.5f;
  CHECK(drawn_set(flat, p) == std::set<token_id>{0, 1});
  p.top_k = 3;  // top 3 are ids 0..2; half of their mass is ids 0 and 1
  CHECK(drawn_set(flat, p) == std::set<token_id>{0, 1});

  // A tie spanning the cut on a longer row: 100.5 of 1000 equal tokens needs ids 0..100.
  const std::vector<float> wide(1000, 0.25f);
  p.top_k = 0;
  p.top_p = 0.1005f;
  const auto got = drawn_set(wide, p, 20'000);
  CHECK(*got.begin() == 0);
  CHECK(*got.rbegin() == 100);
  CHECK(got.size() == 101);
}

TEST_CASE("top-p on random rows draws only inside the exact nucleus", "[core][sampling]") {
  std::mt19937 gen(99);
  std::uniform_real_distribution<float> top_p(0.05f, 0.99f);
  int num_checked = 0;
  for (std::uint32_t s = 0; s < 30; ++s) {
    const auto row = random_row(2000, 2.5f, s);
    sampling_params p = with_temperature(0.8f);
    p.top_p = top_p(gen);
    // Reference nucleus by a full sort in double.
    const auto probs = softmax(row, p.temperature);
    std::vector<token_id> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](token_id a, token_id b) { return probs[a] > probs[b]; });
    double cum = 0.0;
    std::size_t n = 0;
    while (n < order.size() && cum < p.top_p) cum += probs[order[n++]];
    if (std::abs(cum - probs[order[n - 1]] - p.top_p) < 1e-4 || std::abs(cum - p.top_p) < 1e-4) continue;
    const std::set<token_id> nucleus(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n));
    const auto got = drawn_set(row, p, 3000);
    INFO("seed " << s << ", top_p " << p.top_p << ", nucleus size " << n);
    CHECK(std::includes(nucleus.begin(), nucleus.end(), got.begin(), got.end()));
    // The draw reaches the nucleus' least likely member when it is not too rare.
    if (probs[order[n - 1]] / cum > 0.01) CHECK(got.contains(order[n - 1]));
    ++num_checked;
  }
  CHECK(num_checked > 20);
}

TEST_CASE("min-p drops tokens below min_p times the max probability", "[core][sampling]") {
  // probabilities 0.05, 0.5, 0.15, 0.3
  const std::vector<float> row{std::log(0.05f), std::log(0.5f), std::log(0.15f), std::log(0.3f)};
  sampling_params p = with_temperature(1.0f);
  for (int top_k : {0, 3}) {
    INFO("top_k = " << top_k);
    p.top_k = top_k;
    p.min_p = 0.2f;  // threshold 0.1: only 0.05 goes
    CHECK(drawn_set(row, p) == std::set<token_id>{1, 2, 3});
    p.min_p = 0.35f;  // threshold 0.175
    CHECK(drawn_set(row, p) == std::set<token_id>{1, 3});
    p.min_p = 1.0f;
    CHECK(drawn_set(row, p) == std::set<token_id>{1});
  }
  // Applied after top-p: top_p 0.7 keeps {0.5, 0.3}; min_p 0.7 then drops the 0.3.
  p.top_k = 0;
  p.top_p = 0.7f;
  p.min_p = 0.7f;
  CHECK(drawn_set(row, p) == std::set<token_id>{1});
}

TEST_CASE("penalties on a 5-token row", "[core][sampling]") {
  std::vector<float> row{2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  sampling_params p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  // prompt: 0 1 (and ids outside the row, ignored); output: 1 3 3
  const std::vector<token_id> history{0, 1, 9, -1, 1, 3, 3};
  apply_penalties(row, p, history, 4);
  CHECK(row[0] == Approx(1.0f));    // prompt only: 2 / 2
  CHECK(row[1] == Approx(-2.75f));  // -1 * 2 - 0.5 - 0.25 * 1
  CHECK(row[2] == Approx(0.5f));
  CHECK(row[3] == Approx(0.5f));    // 3 / 2 - 0.5 - 0.25 * 2
  CHECK(row[4] == Approx(-2.0f));

  // Same again on a fresh row: the per-token marks were cleared.
  std::vector<float> again{2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  apply_penalties(again, p, history, 4);
  CHECK(again == row);

  // All-prompt history: presence and frequency do nothing, repetition still applies.
  std::vector<float> prompt_only{2.0f, -1.0f, 0.5f, 3.0f, -2.0f};
  apply_penalties(prompt_only, p, history, 100);
  CHECK(prompt_only == std::vector<float>{1.0f, -2.0f, 0.5f, 1.5f, -2.0f});

  // Greedy sampling sees the penalised row: id 3 (3.0) would win without penalties.
  sampling_params g = p;
  g.temperature = 0.0f;
  CHECK(sample(std::vector<float>{2.0f, -1.0f, 0.5f, 3.0f, -2.0f}, g, history, 4, 1, 0).token == 0);
}

TEST_CASE("the draw depends only on seed and sample index", "[core][sampling]") {
  const auto row = random_row(1000, 0.5f, 3);
  const auto other = random_row(5000, 4.0f, 4);
  sampling_params p = with_temperature(1.0f);
  sampling_params noisy = p;
  noisy.repetition_penalty = 1.3f;
  noisy.top_p = 0.5f;
  const std::vector<token_id> hist{1, 2, 3};
  std::set<token_id> distinct;
  for (std::uint64_t i = 0; i < 100; ++i) {
    const token_id first = sample(row, p, {}, 0, 77, i).token;
    // Another request sampled in between (another batch mate) changes nothing.
    (void)sample(other, noisy, hist, 1, 5, i * 3);
    CHECK(sample(row, p, {}, 0, 77, i).token == first);
    distinct.insert(first);
  }
  CHECK(distinct.size() > 60);  // near-uniform over 1000: indices give different draws

  int num_differ = 0;
  for (std::uint64_t i = 0; i < 100; ++i)
    num_differ += sample(row, p, {}, 0, 77, i).token != sample(row, p, {}, 0, 78, i).token;
  CHECK(num_differ > 80);
}

TEST_CASE("counter_rng is a pure function of (seed, index)", "[core][sampling]") {
  counter_rng a(5, 9), b(5, 9), c(5, 10), d(6, 9);
  const auto a1 = a.next_u64();
  CHECK(a1 == b.next_u64());
  CHECK(a.next_u64() == b.next_u64());
  CHECK(a1 != c.next_u64());
  CHECK(a1 != d.next_u64());
  double sum = 0.0;
  for (std::uint64_t i = 0; i < 100'000; ++i) {
    const double u = counter_rng(42, i).next_unit();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(std::abs(sum / 100'000 - 0.5) < 0.005);
  CHECK(make_random_seed() != make_random_seed());
}

TEST_CASE("logprobs are the log-softmax of the raw logits", "[core][sampling]") {
  const std::vector<float> row{1.0f, 2.0f, 3.0f, 0.5f, 3.0f};
  double z = 0.0;
  for (float x : row) z += std::exp(static_cast<double>(x));
  const auto log_softmax = [&](token_id t) { return row[t] - std::log(z); };
  sampling_params p = with_temperature(0.5f);
  p.repetition_penalty = 1.5f;  // must not show in the logprobs
  p.logprobs = 3;
  const std::vector<token_id> hist{2};
  for (std::uint64_t i = 0; i < 20; ++i) {
    const auto s = sample(row, p, hist, 0, 3, i);
    CHECK(s.logprob == Approx(log_softmax(s.token)).margin(1e-5));
    REQUIRE(s.top_logprobs.size() == 3);
    CHECK(s.top_logprobs[0].token == 2);  // tie with 4: lower id first
    CHECK(s.top_logprobs[1].token == 4);
    CHECK(s.top_logprobs[2].token == 1);
    for (const auto& t : s.top_logprobs) CHECK(t.logprob == Approx(log_softmax(t.token)).margin(1e-5));
  }
  p.logprobs = 0;
  CHECK(sample(row, p, {}, 0, 1, 1).top_logprobs.empty());

  // Large row: the denominator over 128k entries stays accurate.
  const auto big = random_row(128'000, 3.0f, 8);
  double big_z = 0.0;
  const double top = *std::max_element(big.begin(), big.end());
  for (float x : big) big_z += std::exp(x - top);
  const auto s = sample(big, with_temperature(1.0f), {}, 0, 9, 0);
  CHECK(s.logprob == Approx(big[s.token] - top - std::log(big_z)).margin(1e-4));
}

TEST_CASE("is_stop_token: stop ids always, eos unless ignore_eos", "[core][sampling]") {
  sampling_params p;
  p.stop_token_ids = {5, 8};
  const std::vector<token_id> eos{2};
  CHECK(is_stop_token(2, p, eos));
  CHECK(is_stop_token(5, p, eos));
  CHECK_FALSE(is_stop_token(3, p, eos));
  p.ignore_eos = true;
  CHECK_FALSE(is_stop_token(2, p, eos));
  CHECK(is_stop_token(8, p, eos));
}

TEST_CASE("sample_rows: one token per sampling step, in plan order, each from its own row", "[core][sampling]") {
  step_plan plan;
  for (seq_id id : {7, 3, 9, 4}) {
    seq_step s;
    s.id = id;
    s.do_sample = id != 3;  // a prompt chunk that does not end its prompt takes no row
    plan.seqs.push_back(s);
  }
  std::vector<std::size_t> rows;
  const auto tokens = sample_rows(plan, [&](const seq_step& s, std::size_t row, int draft_row) {
    CHECK(draft_row == 0);
    rows.push_back(row);
    sampled_token t;
    t.token = token_id(100 * s.id + int(row));
    return t;
  });
  CHECK(rows == std::vector<std::size_t>{0, 1, 2});
  REQUIRE(tokens.size() == 3);
  CHECK((tokens[0].id == 7 && tokens[0].token == 700));
  CHECK((tokens[1].id == 9 && tokens[1].token == 901));
  CHECK((tokens[2].id == 4 && tokens[2].token == 402));
}

TEST_CASE("sample_rows: a drafted step keeps its draft while each row samples it, then one token more",
          "[core][sampling]") {
  step_plan plan;
  seq_step a;  // draft 5 6 7 8: rows sample 5 6 9 (refutes 7): tokens 5 6 9
  a.id = 1;
  a.do_sample = true;
  a.tokens = {4, 5, 6, 7, 8};
  a.num_draft = 4;
  seq_step b;  // no draft: one row
  b.id = 2;
  b.do_sample = true;
  b.tokens = {3};
  seq_step c;  // draft 1 2, all kept: tokens 1 2 and the last row's
  c.id = 3;
  c.do_sample = true;
  c.tokens = {0, 1, 2};
  c.num_draft = 2;
  plan.seqs = {a, b, c};
  const std::map<std::size_t, token_id> answers{{0, 5}, {1, 6}, {2, 9}, {3, 8}, {4, 8}, {5, 30}, {6, 1}, {7, 2}, {8, 44}};
  std::vector<std::pair<std::size_t, int>> asked;
  const auto tokens = sample_rows(plan, [&](const seq_step&, std::size_t row, int draft_row) {
    asked.emplace_back(row, draft_row);
    sampled_token t;
    t.token = answers.at(row);
    return t;
  });
  // Rows after a refuted draft are never sampled; the next sequence's rows start after
  // all of the drafted step's (its logits hold num_draft + 1 rows).
  CHECK(asked == std::vector<std::pair<std::size_t, int>>{{0, 0}, {1, 1}, {2, 2}, {5, 0}, {6, 0}, {7, 1}, {8, 2}});
  std::vector<std::pair<seq_id, token_id>> got;
  for (const auto& t : tokens) got.emplace_back(t.id, t.token);
  CHECK(got == std::vector<std::pair<seq_id, token_id>>{{1, 5}, {1, 6}, {1, 9}, {2, 30}, {3, 1}, {3, 2}, {3, 44}});
}

TEST_CASE("sample(row, step, i) samples row i as the step without a draft would at that position",
          "[core][sampling]") {
  // Seeded top-p sampling with a frequency penalty: row 2 of a drafted step follows the
  // draft's first two tokens in its history and draws at sample_index + 2.
  std::vector<float> logits{0.5f, 1.0f, 0.2f, 0.9f, 1.1f, 0.3f};
  seq_step drafted;
  drafted.params.temperature = 1.0f;
  drafted.params.top_p = 0.9f;
  drafted.params.frequency_penalty = 0.7f;
  drafted.seed = 77;
  drafted.sample_index = 5;
  drafted.num_prompt_tokens = 2;
  drafted.history = {0, 1, 4};
  drafted.tokens = {4, 3, 4, 1};
  drafted.num_draft = 3;
  drafted.do_sample = true;
  seq_step plain = drafted;
  plain.num_draft = 0;
  plain.history = {0, 1, 4, 3, 4};
  plain.sample_index = 7;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    drafted.seed = plain.seed = seed;
    CHECK(sample(logits, drafted, 2).token == sample(logits, plain).token);
  }
}

TEST_CASE("try_validate rejects out-of-range params", "[core][sampling]") {
  CHECK(try_validate(sampling_params{}).has_value());
  sampling_params p;
  p.top_p = 0.0f;
  CHECK_FALSE(try_validate(p).has_value());
  p = {};
  p.temperature = -1.0f;
  CHECK_FALSE(try_validate(p).has_value());
  p = {};
  p.repetition_penalty = 0.0f;
  CHECK_FALSE(try_validate(p).has_value());
  p = {};
  p.logprobs = max_top_logprobs + 1;
  const auto r = try_validate(p);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == errc::invalid_argument);
}

TEST_CASE("sampling speed on a 128k row", "[core][sampling]") {
  const auto row = random_row(128'256, 2.0f, 21);
  token_id sink = 0;
  // Best of several rounds: the figure is for reading, and other load only adds to it.
  const auto microseconds_per_sample = [&](const sampling_params& p) {
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 20; ++i) sink += sample(row, p, {}, 0, 1, static_cast<std::uint64_t>(i)).token;
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count() / 20);
    }
    return best;
  };
  sampling_params top_p = with_temperature(0.8f);
  top_p.top_p = 0.9f;
  sampling_params top_k = with_temperature(0.8f);
  top_k.top_k = 50;
  const double us_top_p = microseconds_per_sample(top_p);
  const double us_top_k = microseconds_per_sample(top_k);
  const double us_greedy = microseconds_per_sample(with_temperature(0.0f));
  WARN("sample() on a 128256-token row: T=0.8 top_p=0.9 " << us_top_p << " us, top_k=50 " << us_top_k
                                                          << " us, greedy " << us_greedy << " us");
  CHECK(sink >= 0);
}
