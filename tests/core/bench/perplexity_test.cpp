#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

#include "core/bench/perplexity.hpp"

using namespace inflight;
using namespace inflight::bench;

TEST_CASE("perplexity chunks: whole chunks only, the second half scored", "[core][perplexity]") {
  const auto p = plan_perplexity_chunks(1000, 128, 0);
  CHECK(p.num_chunks == 7);
  CHECK(p.first == 64);
  CHECK(p.num_scored() == 63);
  CHECK(plan_perplexity_chunks(1000, 128, 3).num_chunks == 3);
  CHECK(plan_perplexity_chunks(100, 128, 0).num_chunks == 0);
}

TEST_CASE("perplexity of a uniform distribution is the vocabulary size", "[core][perplexity]") {
  perplexity_accumulator acc;
  const std::vector<float> uniform(50, 1.5f);
  for (int i = 0; i < 10; ++i) acc.add(uniform, i);
  CHECK(acc.count() == 10);
  CHECK(acc.perplexity() == Approx(50.0).epsilon(1e-12));
  CHECK(acc.perplexity_stderr() == Approx(0.0).margin(1e-9));
  const auto ls = log_softmax(std::vector<float>{1000.0f, 0.0f});  // no overflow
  CHECK(ls[0] == Approx(0.0).margin(1e-12));
  CHECK(std::exp(ls[1]) == Approx(std::exp(-1000.0)).margin(1e-300));
}

TEST_CASE("KL divergence, top-1 agreement and delta p on a hand-computed case", "[core][perplexity]") {
  // base p = (1/2, 1/2); model q = (3/4, 1/4).
  const std::vector<float> base{0.0f, 0.0f}, model{float(std::log(3.0)), 0.0f};
  const auto s = compare_distributions(base, model, 1);
  CHECK(s.kl == Approx(0.5 * std::log(0.5 / 0.75) + 0.5 * std::log(0.5 / 0.25)).epsilon(1e-6));
  CHECK(s.delta_p == Approx(-0.25).epsilon(1e-6));
  CHECK(s.is_same_top);  // both pick token 0 (the base's tie goes to the first)
  const auto flipped = compare_distributions(std::vector<float>{0.0f, 1.0f}, model, 0);
  CHECK_FALSE(flipped.is_same_top);
  CHECK(compare_distributions(model, model, 0).kl == Approx(0.0).margin(1e-12));

  std::vector<kl_sample> samples;
  for (int i = 1; i <= 100; ++i) samples.push_back({double(i), i % 4 != 0, i % 2 == 0 ? 0.1 : -0.1});
  const auto sum = summarize(samples);
  CHECK(sum.count == 100);
  CHECK(sum.mean_kl == Approx(50.5));
  CHECK(sum.median_kl == Approx(50.5));
  CHECK(sum.max_kl == 100.0);
  CHECK(sum.p99_kl == Approx(99.01));
  CHECK(sum.same_top_fraction == Approx(0.75));
  CHECK(sum.rms_delta_p == Approx(0.1));
}

TEST_CASE("llama.cpp's logits file: rows encode log-probabilities over the top 16 nats", "[bench][perplexity]") {
  const std::vector<float> logits{2.0f, -1.0f, 0.5f, -30.0f, 3.0f};
  std::vector<std::uint16_t> row(std::size_t(llama_row_values(5)));
  CHECK(row.size() == 10);  // 2 floats, then 5 values padded to 6
  encode_llama_log_probs(logits, row.data());
  const auto decoded = decode_llama_log_probs(row.data(), 5);
  const auto exact = log_softmax(logits);
  // Within one step of 16 / 65535 nats where the logit lies in [max - 16, max];
  // -30 is below: it reads as the lowest value, max - 16 - log-sum-exp.
  for (int i : {0, 1, 2, 4}) CHECK(decoded[i] == Approx(exact[i]).margin(16.0 / 65535));
  CHECK(decoded[3] == Approx(exact[4] - 16.0).margin(1e-4));
  // The head: the magic, n_ctx, n_vocab, n_chunk, then the tokens.
  const auto head = llama_logits_head(2, 5, {7, 8, 9, 10}, 2);
  REQUIRE(head.size() == 8 + 12 + 16);
  CHECK(head.substr(0, 8) == "_logits_");
  std::int32_t fields[7];
  std::memcpy(fields, head.data() + 8, sizeof(fields));
  CHECK(fields[0] == 2);
  CHECK(fields[1] == 5);
  CHECK(fields[2] == 2);
  CHECK(fields[6] == 10);
}
