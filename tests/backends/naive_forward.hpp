#pragma once
// A naive Llama / Qwen3 forward pass in double precision, one token at a time, written
// from the Hugging Face modelling code (per-head RMSNorm of q and k before rotate_half
// RoPE): the reference the cpu backend's logits and hidden states are compared with.

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/model/model_weights.hpp"

namespace inflight::test {

using vec = std::vector<double>;

inline vec rmsnorm(const vec& x, const float* w, std::size_t offset, std::size_t n, double eps) {
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += x[offset + i] * x[offset + i];
  const double scale = 1.0 / std::sqrt(ss / double(n) + eps);
  vec out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = w[i] * x[offset + i] * scale;
  return out;
}

inline vec matvec(const weight_tensor& matrix, const vec& x, std::size_t rows) {
  const auto w = matrix.f32();
  vec y(rows, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < x.size(); ++c) y[r] += double(w[r * x.size() + c]) * x[c];
  return y;
}

/// q/k norm (when `use_qk_norm`) then rotate_half RoPE of one head in place.
inline void norm_and_rope(vec& v, std::size_t offset, const std::vector<float>& norm, const model_config& c, int pos,
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

/// The final hidden state (after the final norm) at every position of `tokens`, in
/// double precision, one token at a time.
inline std::vector<vec> naive_hidden_states(const model_weights& w, const std::vector<token_id>& tokens,
                                            bool use_qk_norm = true) {
  const auto& c = w.config;
  const auto d = std::size_t(c.dim), hd = std::size_t(c.head_dim), q_dim = std::size_t(c.q_dim());
  const auto kv_dim = std::size_t(c.kv_dim());
  std::vector<std::vector<vec>> keys(w.layers.size()), values(w.layers.size());
  vec x;
  std::vector<vec> out;
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
    out.push_back(rmsnorm(x, w.final_norm.data(), 0, d, c.norm_eps));
  }
  return out;
}

/// Logits after the last of `tokens`, in double precision, one token at a time.
inline vec naive_forward(const model_weights& w, const std::vector<token_id>& tokens, bool use_qk_norm) {
  return matvec(w.classifier, naive_hidden_states(w, tokens, use_qk_norm).back(), std::size_t(w.config.vocab_size));
}

}  // namespace inflight::test
