// Qwen3 on the cpu backend against a naive forward pass written from the Hugging Face
// modelling code (per-head RMSNorm of q and k before rotate_half RoPE).
#include <catch2/catch.hpp>

#include "tests/test_weights.hpp"

#include <cmath>
#include <memory>
#include <random>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/backends/naive_forward.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

model_config tiny_qwen3() {
  auto c = test::small_qwen3_config({.head_dim = 16, .vocab = 70});
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.tied_embeddings = false;
  return c;
}

/// Dummy weights with norms far from 1, so that every norm weight shows in the logits.
std::shared_ptr<const model_weights> qwen3_weights(std::uint64_t seed) {
  auto w = make_dummy_weights(tiny_qwen3(), seed);
  REQUIRE(w.has_value());
  std::mt19937 rng{unsigned(seed)};
  std::uniform_real_distribution<float> scale(0.5f, 3.0f);
  for (auto& l : w->layers) {
    for (auto* v : {&l.q_norm, &l.k_norm, &l.attn_norm, &l.ffn_norm}) for (auto& x : *v) x = scale(rng);
    // Large q/k: un-normalised scores would saturate the softmax.
    test::edit_values(l.wq, [](float x) { return x * 5.0f; });
    test::edit_values(l.wk, [](float x) { return x * 5.0f; });
  }
  return std::make_shared<const model_weights>(std::move(*w));
}

std::vector<float> backend_logits(const std::shared_ptr<const model_weights>& w, const std::vector<token_id>& tokens) {
  auto be = cpu_backend::create(w, kv_cache_config{16, 8, 0});
  REQUIRE(be.has_value());
  step_plan plan;
  seq_step s;
  s.id = 1;
  s.tokens = tokens;
  s.block_table = {3, 0};  // two blocks, out of order
  s.do_sample = true;
  plan.seqs.push_back(s);
  auto logits = (*be)->forward(plan);
  REQUIRE(logits.has_value());
  return {logits->begin(), logits->end()};
}

double max_abs_diff(const std::vector<float>& a, const vec& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

}  // namespace

TEST_CASE("qwen3 forward on the cpu backend equals the naive forward with q/k norms", "[backend][qwen3]") {
  const auto w = qwen3_weights(7);
  const std::vector<token_id> tokens = {5, 17, 3, 60, 22, 9, 41, 12, 0, 33, 8, 19, 27, 2, 55, 30, 11, 4};
  const auto got = backend_logits(w, tokens);
  const auto want = naive_forward(*w, tokens, true);
  const auto without_norm = naive_forward(*w, tokens, false);
  REQUIRE(got.size() == want.size());
  double spread = 0;
  for (std::size_t i = 0; i < want.size(); ++i) spread = std::max(spread, std::abs(want[i] - without_norm[i]));
  INFO("the q/k norm moves some logit by " << spread);
  REQUIRE(spread > 0.05);  // the norm matters for these weights, far beyond the tolerance below
  CHECK(max_abs_diff(got, want) < 1e-3);
  CHECK(max_abs_diff(got, without_norm) > 0.05);
}

TEST_CASE("the same weights as Llama (no q/k norm) give the naive forward without norms", "[backend][qwen3]") {
  auto llama = std::make_shared<model_weights>(*qwen3_weights(9));
  llama->config.qk_norm = false;
  llama->config.architecture = "LlamaForCausalLM";
  for (auto& l : llama->layers) l.q_norm.clear(), l.k_norm.clear();
  const std::vector<token_id> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto got = backend_logits(llama, tokens);
  CHECK(max_abs_diff(got, naive_forward(*llama, tokens, false)) < 1e-3);
}
