// Qwen3 on the cpu backend against a naive forward pass written from the Hugging Face
// modelling code (per-head RMSNorm of q and k before rotate_half RoPE).
#include <catch2/catch.hpp>

#include "tests/test_weights.hpp"

#include <cmath>
#include <memory>
#include <random>

#include "actors/backend/cpu_backend.hpp"
#include "core/model/dummy_model.hpp"
#include "core/model/shapes.hpp"

using namespace inflight;

namespace {

using vec = std::vector<double>;

model_config tiny_qwen3() {
  model_config c;
  c.dim = 32;
  c.hidden_dim = 48;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 70;
  c.max_seq_len = 128;
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.tied_embeddings = false;
  auto q = try_as_family(c, "qwen3");
  REQUIRE(q.has_value());
  return *q;
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

vec rmsnorm(const vec& x, const float* w, std::size_t offset, std::size_t n, double eps) {
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += x[offset + i] * x[offset + i];
  const double scale = 1.0 / std::sqrt(ss / double(n) + eps);
  vec out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = w[i] * x[offset + i] * scale;
  return out;
}

vec matvec(const weight_tensor& matrix, const vec& x, std::size_t rows) {
  const auto w = matrix.f32();
  vec y(rows, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < x.size(); ++c) y[r] += double(w[r * x.size() + c]) * x[c];
  return y;
}

/// q/k norm (when `use_qk_norm`) then rotate_half RoPE of one head in place.
void norm_and_rope(vec& v, std::size_t offset, const std::vector<float>& norm, const model_config& c, int pos,
                   bool use_qk_norm) {
  const auto hd = std::size_t(c.head_dim);
  if (use_qk_norm) {
    const auto normed = rmsnorm(v, norm.data(), offset, hd, c.norm_eps);
    std::copy(normed.begin(), normed.end(), v.begin() + std::ptrdiff_t(offset));
  }
  for (std::size_t i = 0; i < hd / 2; ++i) {
    const double angle = pos * std::pow(double(c.rope_theta), -2.0 * double(i) / double(hd));
    const double a = v[offset + i], b = v[offset + i + hd / 2];
    v[offset + i] = a * std::cos(angle) - b * std::sin(angle);
    v[offset + i + hd / 2] = a * std::sin(angle) + b * std::cos(angle);
  }
}

/// Logits after the last of `tokens`, in double precision, one token at a time.
vec naive_forward(const model_weights& w, const std::vector<token_id>& tokens, bool use_qk_norm) {
  const auto& c = w.config;
  const auto d = std::size_t(c.dim), hd = std::size_t(c.head_dim), q_dim = std::size_t(c.q_dim());
  const auto kv_dim = std::size_t(c.kv_dim());
  std::vector<std::vector<vec>> keys(w.layers.size()), values(w.layers.size());
  vec x;
  for (std::size_t p = 0; p < tokens.size(); ++p) {
    const auto embedding = w.token_embedding.f32();
    x.assign(embedding.begin() + std::ptrdiff_t(std::size_t(tokens[p]) * d),
             embedding.begin() + std::ptrdiff_t(std::size_t(tokens[p]) * d + d));
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
      const auto& L = w.layers[l];
      const auto h = rmsnorm(x, L.attn_norm.data(), 0, d, c.norm_eps);
      auto q = matvec(L.wq, h, q_dim), k = matvec(L.wk, h, kv_dim);
      for (int head = 0; head < c.num_heads; ++head) norm_and_rope(q, head * hd, L.q_norm, c, int(p), use_qk_norm);
      for (int head = 0; head < c.num_kv_heads; ++head) norm_and_rope(k, head * hd, L.k_norm, c, int(p), use_qk_norm);
      keys[l].push_back(k);
      values[l].push_back(matvec(L.wv, h, kv_dim));
      vec attn(q_dim, 0.0);
      for (int head = 0; head < c.num_heads; ++head) {
        const std::size_t kvh = std::size_t(head / (c.num_heads / c.num_kv_heads));
        vec scores(p + 1);
        double max_score = -1e300, sum = 0;
        for (std::size_t j = 0; j <= p; ++j) {
          double dot = 0;
          for (std::size_t i = 0; i < hd; ++i) dot += q[head * hd + i] * keys[l][j][kvh * hd + i];
          scores[j] = dot / std::sqrt(double(hd));
          max_score = std::max(max_score, scores[j]);
        }
        for (auto& s : scores) sum += (s = std::exp(s - max_score));
        for (std::size_t j = 0; j <= p; ++j)
          for (std::size_t i = 0; i < hd; ++i) attn[head * hd + i] += scores[j] / sum * values[l][j][kvh * hd + i];
      }
      const auto o = matvec(L.wo, attn, d);
      for (std::size_t i = 0; i < d; ++i) x[i] += o[i];
      const auto h2 = rmsnorm(x, L.ffn_norm.data(), 0, d, c.norm_eps);
      auto gate = matvec(L.w_gate, h2, std::size_t(c.hidden_dim));
      const auto up = matvec(L.w_up, h2, std::size_t(c.hidden_dim));
      for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      const auto down = matvec(L.w_down, gate, d);
      for (std::size_t i = 0; i < d; ++i) x[i] += down[i];
    }
  }
  return matvec(w.classifier, rmsnorm(x, w.final_norm.data(), 0, d, c.norm_eps), std::size_t(c.vocab_size));
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
