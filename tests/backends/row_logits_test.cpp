// Named logit rows (prefill-only scoring) on the cpu backend: the rows it returns are
// the same entries of the full logits a sampled step computes, for batches that mix
// scored, sampled and mid-prompt sequences.
#include <catch2/catch.hpp>

#include <memory>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;

namespace {

std::shared_ptr<const model_weights> qwen3_model() {
  const auto c = test::small_qwen3_config({.dim = 48, .hidden = 64, .head_dim = 16, .vocab = 300, .max_seq_len = 256});
  auto w = make_dummy_weights(c, 3);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

std::unique_ptr<cpu_backend> make_backend(const std::shared_ptr<const model_weights>& w) {
  auto be = cpu_backend::create(w, kv_cache_config{16, 32, 0});
  REQUIRE(be.has_value());
  return std::move(*be);
}

std::vector<token_id> prompt_of(int length, int salt) {
  std::vector<token_id> p;
  for (int i = 0; i < length; ++i) p.push_back(token_id((i * 37 + salt * 11) % 290 + 5));
  return p;
}

seq_step step_of(seq_id id, const std::vector<token_id>& prompt, int begin, int end, std::vector<block_id> blocks) {
  seq_step s;
  s.id = id;
  s.tokens.assign(prompt.begin() + begin, prompt.begin() + end);
  s.start_position = begin;
  s.block_table = std::move(blocks);
  return s;
}

/// Full logits after the whole prompt, from a sampled step on a fresh backend.
std::vector<float> full_logits(const std::shared_ptr<const model_weights>& w, const std::vector<token_id>& prompt) {
  auto be = make_backend(w);
  step_plan plan;
  plan.seqs.push_back(step_of(1, prompt, 0, int(prompt.size()), {0, 1, 2}));
  plan.seqs.back().do_sample = true;
  auto logits = be->forward(plan);
  REQUIRE(logits.has_value());
  return {logits->begin(), logits->end()};
}

}  // namespace

TEST_CASE("named logit rows equal those rows of the full logits", "[backend][rerank]") {
  const auto w = qwen3_model();
  const auto a = prompt_of(21, 1), b = prompt_of(9, 2), c = prompt_of(30, 3);
  auto be = make_backend(w);
  // Step 1: a's first chunk (no output), b whole with rows, c whole and sampled.
  step_plan first;
  first.step_id = 1;
  first.seqs.push_back(step_of(10, a, 0, 12, {4, 5}));
  first.seqs.push_back(step_of(11, b, 0, 9, {6}));
  first.seqs.back().logit_rows = {7, 250, 7};
  first.seqs.push_back(step_of(12, c, 0, 30, {8, 9}));
  first.seqs.back().do_sample = true;
  auto r1 = be->execute(first);
  REQUIRE(r1.has_value());
  REQUIRE(r1->tokens.size() == 1);
  REQUIRE(r1->rows.size() == 1);
  CHECK(r1->rows[0].id == 11);
  const auto want_b = full_logits(w, b);
  REQUIRE(r1->rows[0].values.size() == 3);
  CHECK(r1->rows[0].values[0] == Approx(want_b[7]).margin(1e-4));
  CHECK(r1->rows[0].values[1] == Approx(want_b[250]).margin(1e-4));
  CHECK(r1->rows[0].values[2] == r1->rows[0].values[0]);
  // Step 2: a's last chunk with rows, after its first chunk's K/V.
  step_plan second;
  second.step_id = 2;
  second.seqs.push_back(step_of(10, a, 12, 21, {4, 5}));
  second.seqs.back().logit_rows = {3, 299};
  auto r2 = be->execute(second);
  REQUIRE(r2.has_value());
  CHECK(r2->tokens.empty());
  REQUIRE(r2->rows.size() == 1);
  const auto want_a = full_logits(w, a);
  CHECK(r2->rows[0].values[0] == Approx(want_a[3]).margin(1e-4));
  CHECK(r2->rows[0].values[1] == Approx(want_a[299]).margin(1e-4));
  // The rows differ from each other: a backend that returned one value twice would fail.
  CHECK(std::abs(r2->rows[0].values[0] - r2->rows[0].values[1]) > 1e-6);
}

TEST_CASE("a logit row outside the vocabulary is a step error, not a read out of bounds", "[backend][rerank]") {
  auto be = make_backend(qwen3_model());
  step_plan plan;
  plan.seqs.push_back(step_of(1, prompt_of(4, 0), 0, 4, {0}));
  plan.seqs.back().logit_rows = {300};
  auto r = be->execute(plan);
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message, Catch::Contains("logit row 300"));
  plan.seqs.back().logit_rows = {-1};
  CHECK_FALSE(be->execute(plan).has_value());
}
