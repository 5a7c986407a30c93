// backend::warm_up(): the steps it runs stay inside the cache and the context, and a
// warmed-up backend computes exactly what a fresh one does (the scratch blocks it wrote
// are overwritten, never read, by the requests that get them later).
#include <catch2/catch.hpp>

#include <memory>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;

namespace {

/// A prompt in blocks {0, 1}: the blocks the warm-up wrote.
step_plan prompt_plan() {
  seq_step s;
  s.id = 7;
  for (int i = 0; i < 20; ++i) s.tokens.push_back(token_id((i * 13 + 5) % 50));
  s.block_table = {0, 1};
  s.do_sample = true;
  step_plan plan;
  plan.seqs.push_back(std::move(s));
  return plan;
}

}  // namespace

TEST_CASE("warm-up: a prefill then one decode step, inside the cache and the context", "[backend][warm_up]") {
  auto c = test::small_config();
  const auto plans = warm_up_plans(c, 64, 16);
  REQUIRE(plans.size() == 2);
  const auto& prefill = plans[0].seqs.at(0);
  const auto& decode = plans[1].seqs.at(0);
  CHECK(prefill.tokens.size() == 16);
  CHECK(prefill.start_position == 0);
  CHECK(decode.tokens.size() == 1);
  CHECK(decode.start_position == 16);
  CHECK(prefill.do_sample);
  CHECK(decode.do_sample);
  CHECK(prefill.block_table == std::vector<block_id>{0, 1});  // 17 positions, blocks of 16
  for (auto t : prefill.tokens) CHECK((t >= 0 && t < c.vocab_size));

  // A cache of one block of 4 tokens: a prefill of 3 and the decode fill it.
  const auto tiny = warm_up_plans(c, 1, 4);
  REQUIRE(tiny.size() == 2);
  CHECK(tiny[0].seqs.at(0).tokens.size() == 3);
  CHECK(tiny[1].seqs.at(0).start_position == 3);
  CHECK(tiny[1].seqs.at(0).block_table == std::vector<block_id>{0});

  // The context bounds it too; with no room for a decode token there is nothing to run.
  c.max_seq_len = 6;
  CHECK(warm_up_plans(c, 64, 16).at(0).seqs.at(0).tokens.size() == 5);
  c.max_seq_len = 1;
  CHECK(warm_up_plans(c, 64, 16).empty());
  CHECK(warm_up_plans(test::small_config(), 0, 16).empty());
}

TEST_CASE("warm-up: a warmed-up cpu backend computes what a fresh one does, bit for bit", "[backend][warm_up]") {
  auto w = make_dummy_weights(test::small_config(), 5);
  REQUIRE(w.has_value());
  const auto weights = std::make_shared<const model_weights>(std::move(*w));
  auto fresh = cpu_backend::create(weights, kv_cache_config{16, 8, 0});
  auto warm = cpu_backend::create(weights, kv_cache_config{16, 8, 0});
  REQUIRE(fresh.has_value());
  REQUIRE(warm.has_value());
  REQUIRE((*warm)->warm_up().has_value());
  auto a = (*fresh)->forward(prompt_plan());
  REQUIRE(a.has_value());
  const std::vector<float> want(a->begin(), a->end());
  auto b = (*warm)->forward(prompt_plan());
  REQUIRE(b.has_value());
  CHECK(std::vector<float>(b->begin(), b->end()) == want);
}
