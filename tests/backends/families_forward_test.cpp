// The families beyond the dense Llama layer on the cpu backend against the naive forward
// pass written from the Hugging Face modelling code: mixtures of experts (Qwen3-MoE with
// YaRN and partial rotation, Qwen2-MoE's shared expert, Mixtral), linear RoPE scaling,
// Gemma 1/2/3 (GeGLU, scaled embeddings, post-norms, soft-caps, interleaved sliding
// windows with their own RoPE base) and Phi-3; a whole prompt in one step and the same
// prompt fed over several steps (chunks that straddle a window's edge).
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
    for (auto* v : {&l.q_norm, &l.k_norm, &l.attn_norm, &l.ffn_norm, &l.post_attn_norm, &l.post_ffn_norm}) {
      for (auto& x : *v) x = scale(rng);
    }
    test::edit_values(l.wq, [](float x) { return x * 5.0f; });
    test::edit_values(l.wk, [](float x) { return x * 5.0f; });
    test::edit_values(l.router, [](float x) { return x * 40.0f; });
    for (auto& x : l.shared_expert_gate) x *= 20.0f;
    for (auto& x : l.attn_sinks) x = 3.0f * x + 1.0f;  // sinks that take a visible share of the softmax
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

/// How far the reference's last logits move when `edit` changes the weights or config.
template <class Edit>
double reference_moves(const model_weights& w, const std::vector<token_id>& tokens, Edit edit) {
  const auto base = naive_forward(w, tokens, true);
  auto other = std::make_shared<model_weights>(w);
  edit(*other);
  const auto logits = naive_forward(*other, tokens, true);
  double diff = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) diff = std::max(diff, std::abs(logits[i] - base[i]));
  return diff;
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

TEST_CASE("Gemma, Phi-3 and sliding windows on the cpu backend equal the modelling code", "[backend][gemma]") {
  SECTION("gemma: GeGLU, embeddings times sqrt(dim)") { check_family(family_config("gemma")); }
  SECTION("gemma2: post-norms, soft-capped scores and logits, every second layer windowed") {
    auto c = family_config("gemma2");
    c.sliding_window = 5;
    c.attn_softcap = 1.5f;  // small enough to bite on these scores
    c.final_softcap = 2.0f;
    c.attention_scale = 0.2f;  // query_pre_attn_scalar 25
    check_family(c);
  }
  SECTION("gemma3: q/k norms, five windowed layers (their own RoPE base) per global one") {
    auto c = family_config("gemma3");
    c.num_layers = 7;
    c.sliding_window = 6;
    c.rope_theta = 1e6f;
    c.rope_local_theta = 10.0f;
    c.scaling.type = rope_scaling_type::linear;  // the global layers only
    c.scaling.factor = 4.0f;
    check_family(c);
  }
  SECTION("a window narrower than the kernel's query tile, every layer windowed") {
    auto c = family_config("llama");
    c.sliding_window = 3;
    check_family(c);
  }
  SECTION("phi3") { check_family(family_config("phi3")); }
  SECTION("phi3 with LongRoPE: the long factors, then the short ones; partial rotation") {
    auto c = family_config("phi3");
    c.rope_dims = 12;
    c.scaling.type = rope_scaling_type::longrope;
    c.scaling.original_max_position = 8;
    c.scaling.factor = 16.0f;
    c.scaling.short_factor = {1.0f, 1.2f, 1.5f, 2.0f, 2.5f, 3.0f};
    c.scaling.long_factor = {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 32.0f};
    check_family(c);
    c.scaling.use_long_factor = false;
    c.scaling.attention_factor = 1.25f;
    check_family(c);
  }
}

TEST_CASE("the reference's windows, soft-caps and post-norms change the logits", "[backend][gemma]") {
  // Each feature the test above checks moves the reference's logits: a backend that
  // ignored it would fail there.
  auto c = family_config("gemma2");
  c.sliding_window = 5;
  c.attn_softcap = 1.5f;
  c.final_softcap = 2.0f;
  const auto w = weights_of(c, 5);
  const std::vector<token_id> tokens = {5, 17, 3, 60, 22, 9, 41, 12, 0, 33, 8, 19};
  const auto differs = [&](auto edit) { return reference_moves(*w, tokens, edit); };
  CHECK(differs([](model_weights& m) { m.config.sliding_window = 0; }) > 1e-3);
  CHECK(differs([](model_weights& m) { m.config.window_period = 0; }) > 1e-3);
  CHECK(differs([](model_weights& m) { m.config.attn_softcap = 0.0f; }) > 1e-3);
  CHECK(differs([](model_weights& m) { m.config.final_softcap = 0.0f; }) > 1e-3);
  CHECK(differs([](model_weights& m) {
          for (auto& l : m.layers) l.post_ffn_norm.clear();
        }) > 1e-3);
  CHECK(differs([](model_weights& m) { m.config.activation = mlp_activation::silu; }) > 1e-3);
}

TEST_CASE("gpt-oss's layers on the cpu backend equal the modelling code", "[backend][moe][gpt-oss]") {
  // Sinks, q/k/v/o biases, a biased router and biased experts with the clamped SwiGLU,
  // every second layer windowed, YaRN.
  auto c = family_config("gpt-oss");
  c.sliding_window = 5;
  c.scaling.type = rope_scaling_type::yarn;
  c.scaling.factor = 4.0f;
  c.scaling.original_max_position = 8;
  check_family(c);
  // Each gpt-oss feature moves the reference's logits.
  const auto w = weights_of(c, 5);
  const std::vector<token_id> tokens = {5, 17, 3, 60, 22, 9, 41, 12};
  const auto differs = [&](auto edit) { return reference_moves(*w, tokens, edit); };
  CHECK(differs([](model_weights& m) { for (auto& l : m.layers) l.attn_sinks.clear(); }) > 1e-3);
  CHECK(differs([](model_weights& m) { for (auto& l : m.layers) l.bo.clear(); }) > 1e-3);
  CHECK(differs([](model_weights& m) { for (auto& l : m.layers) l.down_exps_bias.clear(); }) > 1e-3);
  CHECK(differs([](model_weights& m) { m.config.activation = mlp_activation::silu; }) > 1e-3);
}
