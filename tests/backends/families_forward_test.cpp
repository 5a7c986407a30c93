// The families beyond the dense Llama layer on the cpu backend against the naive forward
// pass written from the Hugging Face modelling code: mixtures of experts (Qwen3-MoE with
// YaRN and partial rotation, Qwen2-MoE's shared expert, Mixtral) and linear RoPE scaling;
// a whole prompt in one step and the same prompt fed over several steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <random>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "tests/backends/naive_forward.hpp"
#include "tests/test_shapes.hpp"
#include "tests/test_weights.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

model_config family_config(std::string_view family) {
  auto c = test::small_config({.dim = 48, .hidden = 64, .heads = 4, .kv_heads = 2, .head_dim = 16, .vocab = 70});
  c.rope = rope_style::half;
  c.tied_embeddings = false;
  c.norm_eps = 1e-6f;
  auto drawn = try_as_family(c, family);
  REQUIRE(drawn.has_value());
  return *drawn;
}

/// Dummy weights with norms far from 1 and routers sharp enough that the experts'
/// choice differs from token to token.
std::shared_ptr<const model_weights> weights_of(const model_config& c, std::uint64_t seed) {
  auto w = make_dummy_weights(c, seed);
  REQUIRE(w.has_value());
  std::mt19937 rng{unsigned(seed)};
  std::uniform_real_distribution<float> scale(0.5f, 3.0f);
  for (auto& l : w->layers) {
    for (auto* v : {&l.q_norm, &l.k_norm, &l.attn_norm, &l.ffn_norm}) for (auto& x : *v) x = scale(rng);
    test::edit_values(l.wq, [](float x) { return x * 5.0f; });
    test::edit_values(l.wk, [](float x) { return x * 5.0f; });
    test::edit_values(l.router, [](float x) { return x * 40.0f; });
    for (auto& x : l.shared_expert_gate) x *= 20.0f;
  }
  return std::make_shared<const model_weights>(std::move(*w));
}

/// The logits after the last token, the prompt fed in steps of `chunk` tokens.
std::vector<float> backend_logits(const std::shared_ptr<const model_weights>& w, const std::vector<token_id>& tokens,
                                  int chunk) {
  auto be = cpu_backend::create(w, kv_cache_config{16, 8, 0});
  REQUIRE(be.has_value());
  std::vector<float> last;
  for (std::size_t begin = 0; begin < tokens.size(); begin += std::size_t(chunk)) {
    const std::size_t end = std::min(tokens.size(), begin + std::size_t(chunk));
    step_plan plan;
    seq_step s;
    s.id = 1;
    s.tokens.assign(tokens.begin() + std::ptrdiff_t(begin), tokens.begin() + std::ptrdiff_t(end));
    s.start_position = int(begin);
    s.block_table = {3, 0};
    s.do_sample = true;
    plan.seqs.push_back(s);
    auto logits = (*be)->forward(plan);
    REQUIRE(logits.has_value());
    last.assign(logits->begin(), logits->end());
  }
  return last;
}

double max_abs_diff(const std::vector<float>& a, const vec& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

void check_family(const model_config& c) {
  const auto w = weights_of(c, 5);
  const std::vector<token_id> tokens = {5, 17, 3, 60, 22, 9, 41, 12, 0, 33, 8, 19, 27, 2, 55, 30, 11, 4};
  const auto want = naive_forward(*w, tokens, true);
  for (int chunk : {18, 5, 1}) {
    INFO(c.architecture << ", steps of " << chunk << " tokens");
    const auto got = backend_logits(w, tokens, chunk);
    REQUIRE(got.size() == want.size());
    CHECK(max_abs_diff(got, want) < 2e-3);
  }
}

}  // namespace

TEST_CASE("mixtures of experts on the cpu backend equal the Hugging Face modelling code", "[backend][moe]") {
  SECTION("qwen3moe: 8 experts, top 2, renormalised") { check_family(family_config("qwen3moe")); }
  SECTION("qwen2moe: top 2 as they are, a gated shared expert") { check_family(family_config("qwen2moe")); }
  SECTION("mixtral") { check_family(family_config("mixtral")); }
}

TEST_CASE("the routers choose: other experts, other logits", "[backend][moe]") {
  // The same weights with every token sent to the same two experts (a flat router) give
  // other logits: the choice of experts is what the test above checks.
  const auto c = family_config("qwen3moe");
  const auto w = weights_of(c, 5);
  auto flat = std::make_shared<model_weights>(*w);
  for (auto& l : flat->layers) {
    std::vector<float> zero(std::size_t(l.router.num_values()), 0.0f);
    l.router = weight_tensor::from_f32(zero, l.router.rows(), l.router.cols());
  }
  const std::vector<token_id> tokens = {5, 17, 3, 60, 22, 9};
  const auto routed = backend_logits(w, tokens, 6);
  const auto flat_logits = backend_logits(flat, tokens, 6);
  CHECK(max_abs_diff(flat_logits, naive_forward(*flat, tokens, true)) < 2e-3);
  double diff = 0;
  for (std::size_t i = 0; i < routed.size(); ++i) diff = std::max(diff, double(std::abs(routed[i] - flat_logits[i])));
  CHECK(diff > 0.05);
}

TEST_CASE("YaRN, linear scaling and partial rotation on the cpu backend equal the modelling code", "[backend][rope]") {
  SECTION("qwen3moe with YaRN x4 over 8 original positions, 8 of 16 dimensions rotated") {
    auto c = family_config("qwen3moe");
    c.rope_dims = 8;
    c.scaling.type = rope_scaling_type::yarn;
    c.scaling.factor = 4.0f;
    c.scaling.original_max_position = 8;
    check_family(c);
  }
  SECTION("qwen3 with linear scaling x3") {
    auto c = family_config("qwen3");
    c.scaling.type = rope_scaling_type::linear;
    c.scaling.factor = 3.0f;
    check_family(c);
  }
  SECTION("YaRN with a stated attention factor") {
    auto c = family_config("qwen3");
    c.scaling.type = rope_scaling_type::yarn;
    c.scaling.factor = 8.0f;
    c.scaling.original_max_position = 4;
    c.scaling.attention_factor = 1.3f;
    check_family(c);
  }
}
