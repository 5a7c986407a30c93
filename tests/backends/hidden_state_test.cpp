// Final hidden states (prefill-only embeddings) on the cpu backend: every hidden output
// (first, last, the sum of a chunk) equals a naive double-precision forward pass's
// final-normed states, for chunked prompts in batches that mix them with sampled,
// scored and mid-prompt sequences.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/backends/naive_forward.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

std::shared_ptr<const model_weights> qwen3_model() {
  const auto c = test::small_qwen3_config({.dim = 48, .hidden = 64, .head_dim = 16, .vocab = 300, .max_seq_len = 256});
  auto w = make_dummy_weights(c, 5);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

std::vector<token_id> prompt_of(int length, int salt) {
  std::vector<token_id> p;
  for (int i = 0; i < length; ++i) p.push_back(token_id((i * 41 + salt * 13) % 290 + 5));
  return p;
}

seq_step chunk_of(seq_id id, const std::vector<token_id>& prompt, int begin, int end, std::vector<block_id> blocks,
                  hidden_output hidden) {
  seq_step s;
  s.id = id;
  s.tokens.assign(prompt.begin() + begin, prompt.begin() + end);
  s.start_position = begin;
  s.block_table = std::move(blocks);
  s.hidden = hidden;
  return s;
}

/// The sum of the naive states of positions [begin, end).
vec naive_sum(const std::vector<vec>& states, int begin, int end) {
  vec out(states.front().size(), 0.0);
  for (int p = begin; p < end; ++p)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += states[std::size_t(p)][i];
  return out;
}

/// max |got - want| / max |want|.
double relative_error(const std::vector<float>& got, const vec& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("hidden outputs equal the naive forward's final-normed states", "[backend][embeddings]") {
  const auto w = qwen3_model();
  auto be = cpu_backend::create(w, kv_cache_config{16, 32, 0});
  REQUIRE(be.has_value());
  const auto a = prompt_of(21, 1), b = prompt_of(9, 2), c = prompt_of(30, 3), d = prompt_of(12, 4);
  const auto na = naive_hidden_states(*w, a), nb = naive_hidden_states(*w, b), nc = naive_hidden_states(*w, c),
             nd = naive_hidden_states(*w, d);
  // Step 1: a's first chunk summed, b whole (last), c whole and sampled, d's first chunk (first).
  step_plan first;
  first.step_id = 1;
  first.seqs.push_back(chunk_of(10, a, 0, 12, {4, 5}, hidden_output::sum));
  first.seqs.push_back(chunk_of(11, b, 0, 9, {6}, hidden_output::last));
  first.seqs.push_back(chunk_of(12, c, 0, 30, {8, 9}, hidden_output::none));
  first.seqs.back().do_sample = true;
  first.seqs.push_back(chunk_of(13, d, 0, 7, {10}, hidden_output::first));
  first.seqs.back().logit_rows = {3, 4};  // scored too: both outputs of one step
  auto r1 = (*be)->execute(first);
  REQUIRE(r1.has_value());
  REQUIRE(r1->tokens.size() == 1);
  REQUIRE(r1->rows.size() == 1);
  REQUIRE(r1->hidden.size() == 3);
  CHECK(r1->hidden[0].id == 10);
  CHECK(r1->hidden[1].id == 11);
  CHECK(r1->hidden[2].id == 13);
  CHECK(relative_error(r1->hidden[0].values, naive_sum(na, 0, 12)) < 1e-4);
  CHECK(relative_error(r1->hidden[1].values, nb.back()) < 1e-4);
  CHECK(relative_error(r1->hidden[2].values, nd.front()) < 1e-4);
  // Step 2: the rest of a (summed) and of d (last), after their first chunks' K/V.
  step_plan second;
  second.step_id = 2;
  second.seqs.push_back(chunk_of(10, a, 12, 21, {4, 5}, hidden_output::sum));
  second.seqs.push_back(chunk_of(13, d, 7, 12, {10}, hidden_output::last));
  auto r2 = (*be)->execute(second);
  REQUIRE(r2.has_value());
  REQUIRE(r2->hidden.size() == 2);
  CHECK(relative_error(r2->hidden[0].values, naive_sum(na, 12, 21)) < 1e-4);
  CHECK(relative_error(r2->hidden[1].values, nd.back()) < 1e-4);
  // The states differ by position: a backend that returned one state for all would fail.
  CHECK(relative_error(r2->hidden[1].values, nd.front()) > 1e-2);
  CHECK(r1->hidden[1].values.size() == std::size_t(w->config.dim));
}

TEST_CASE("a step without hidden outputs returns none", "[backend][embeddings]") {
  auto be = cpu_backend::create(qwen3_model(), kv_cache_config{16, 8, 0});
  REQUIRE(be.has_value());
  step_plan plan;
  plan.seqs.push_back(chunk_of(1, prompt_of(5, 0), 0, 5, {0}, hidden_output::none));
  plan.seqs.back().do_sample = true;
  auto r = (*be)->execute(plan);
  REQUIRE(r.has_value());
  CHECK(r->hidden.empty());
  CHECK((*be)->hidden().empty());
}
