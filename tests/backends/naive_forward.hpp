#pragma once
// A naive Llama / Qwen3 / Qwen-MoE / Mixtral / Gemma forward pass in double precision,
// one token at a time, written from the Hugging Face modelling code (per-head RMSNorm of q
// and k before rotate_half RoPE over the rotated dimensions, with linear or YaRN
// frequencies as modeling_rope_utils computes them; a sparse MoE block's softmax top-k
// router, a shared expert's sigmoid gate; Gemma's scaled embeddings, sliding windows with
// the local layers' own RoPE base, query_pre_attn_scalar, soft-capped scores and logits,
// post-norms and tanh GELU): the reference the cpu backend's logits and hidden states are
// compared with. Norm weights are the multipliers (Gemma's 1 + w, as the loaders keep them).

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

/// Rows [first, first + rows) of `matrix` times x: one expert's matrix of the stacked ones.
inline vec matvec_rows(const weight_tensor& matrix, std::size_t first, const vec& x, std::size_t rows) {
  const auto w = matrix.f32();
  vec y(rows, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < x.size(); ++c) y[r] += double(w[(first + r) * x.size() + c]) * x[c];
  return y;
}

/// Inverse frequency of pair i and the cos / sin scale, as transformers' rope utilities
/// compute them (default, linear, yarn).
inline double inv_freq(const model_config& c, std::size_t i) {
  const double dim = c.rotary_dims(), base = c.rope_theta;
  const double pos_freq = std::pow(base, 2.0 * double(i) / dim);
  if (c.scaling.type == rope_scaling_type::linear) return 1.0 / pos_freq / c.scaling.factor;
  if (c.scaling.type == rope_scaling_type::longrope) return 1.0 / (double(c.scaling.pair_factors()[i]) * pos_freq);
  if (c.scaling.type != rope_scaling_type::yarn) return 1.0 / pos_freq;
  const double factor = c.scaling.factor, original = c.scaling.original_max_position;
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2 * 3.141592653589793)) / (2 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(correction_dim(c.scaling.beta_fast)));
  double high = std::min(dim - 1, std::ceil(correction_dim(c.scaling.beta_slow)));
  if (low == high) high += 0.001;
  const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
  const double extrapolation = 1.0 - ramp;
  return 1.0 / (factor * pos_freq) * (1.0 - extrapolation) + 1.0 / pos_freq * extrapolation;
}

inline double rope_scale(const model_config& c) {
  if (c.scaling.type == rope_scaling_type::longrope) {
    if (c.scaling.attention_factor != 0.0f) return c.scaling.attention_factor;
    const double factor = c.scaling.factor;
    return factor <= 1 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(double(c.scaling.original_max_position)));
  }
  if (c.scaling.type != rope_scaling_type::yarn) return 1.0;
  if (c.scaling.attention_factor != 0.0f) return c.scaling.attention_factor;
  return c.scaling.factor <= 1 ? 1.0 : 0.1 * std::log(double(c.scaling.factor)) + 1.0;
}

/// The config a layer rotates with: Gemma 3's sliding layers use rope_local_base_freq,
/// unscaled.
inline model_config rope_config(const model_config& c, std::size_t layer) {
  if (!c.layer_windowed(int(layer)) || c.rope_local_theta <= 0.0f) return c;
  model_config local = c;
  local.rope_theta = c.rope_local_theta;
  local.scaling = {};
  return local;
}

/// q/k norm (when `use_qk_norm`) then rotate_half RoPE of one head's rotated dimensions in place.
inline void norm_and_rope(vec& v, std::size_t offset, const std::vector<float>& norm, const model_config& c, int pos,
                          bool use_qk_norm) {
  const auto hd = std::size_t(c.head_dim), rd = std::size_t(c.rotary_dims());
  if (use_qk_norm) {
    const auto normed = rmsnorm(v, norm.data(), offset, hd, c.norm_eps);
    std::copy(normed.begin(), normed.end(), v.begin() + std::ptrdiff_t(offset));
  }
  const double scale = rope_scale(c);
  for (std::size_t i = 0; i < rd / 2; ++i) {
    const double angle = pos * inv_freq(c, i);
    const double a = v[offset + i], b = v[offset + i + rd / 2];
    v[offset + i] = (a * std::cos(angle) - b * std::sin(angle)) * scale;
    v[offset + i + rd / 2] = (a * std::sin(angle) + b * std::cos(angle)) * scale;
  }
}

/// act(gate) * up: SiLU, gelu_pytorch_tanh, or gpt-oss's clamped SwiGLU (alpha 1.702, limit 7).
inline double activate(const model_config& c, double gate, double up) {
  if (c.activation == mlp_activation::swiglu_oai) {
    const double g = std::min(gate, 7.0), u = std::clamp(up, -7.0, 7.0);
    return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
  }
  if (c.activation == mlp_activation::silu) return gate / (1.0 + std::exp(-gate)) * up;
  const double k = std::sqrt(2.0 / 3.141592653589793);
  return 0.5 * gate * (1.0 + std::tanh(k * (gate + 0.044715 * gate * gate * gate))) * up;
}

/// The value at `i` of a bias, 0 when there is none.
inline double bias_at(const std::vector<float>& bias, std::size_t i) { return bias.empty() ? 0.0 : double(bias[i]); }

/// A gated MLP of `hidden` rows starting at row `first` of each matrix (an expert's), with
/// the experts' biases where the layer has them (gpt-oss).
inline vec swiglu(const model_config& c, const layer_weights& L, const weight_tensor& gate_w, const weight_tensor& up_w,
                  const weight_tensor& down_w, std::size_t first, std::size_t hidden, const vec& h, std::size_t d,
                  bool expert) {
  auto gate = matvec_rows(gate_w, first, h, hidden);
  const auto up = matvec_rows(up_w, first, h, hidden);
  for (std::size_t i = 0; i < hidden; ++i) {
    const double g = gate[i] + (expert ? bias_at(L.gate_exps_bias, first + i) : 0.0);
    const double u = up[i] + (expert ? bias_at(L.up_exps_bias, first + i) : 0.0);
    gate[i] = activate(c, g, u);
  }
  // down's rows of this expert: [first / hidden * d, ...)
  auto y = matvec_rows(down_w, first / hidden * d, gate, d);
  if (expert) {
    for (std::size_t i = 0; i < d; ++i) y[i] += bias_at(L.down_exps_bias, first / hidden * d + i);
  }
  return y;
}

/// The sparse MoE block: softmax over the router's logits, the top k (renormalised when
/// the config says), their experts summed with those weights; a shared expert scaled by
/// sigmoid(x . gate).
inline vec moe_block(const layer_weights& L, const model_config& c, const vec& h) {
  const auto d = std::size_t(c.dim), ff = std::size_t(c.moe.expert_hidden_dim);
  const auto num_experts = std::size_t(c.moe.num_experts);
  auto logits = matvec(L.router, h, num_experts);
  for (std::size_t e = 0; e < num_experts; ++e) logits[e] += bias_at(L.router_bias, e);
  const double top = *std::max_element(logits.begin(), logits.end());
  vec p(num_experts);
  double sum = 0;
  for (std::size_t e = 0; e < num_experts; ++e) sum += (p[e] = std::exp(logits[e] - top));
  for (auto& v : p) v /= sum;
  std::vector<std::size_t> order(num_experts);
  for (std::size_t e = 0; e < num_experts; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  order.resize(std::size_t(c.moe.experts_per_token));
  double chosen = 0;
  for (auto e : order) chosen += p[e];
  vec out(d, 0.0);
  for (auto e : order) {
    const double weight = c.moe.normalize_weights ? p[e] / chosen : p[e];
    const auto y = swiglu(c, L, L.gate_exps, L.up_exps, L.down_exps, e * ff, ff, h, d, true);
    for (std::size_t i = 0; i < d; ++i) out[i] += weight * y[i];
  }
  if (c.moe.shared_hidden_dim > 0) {
    auto y = swiglu(c, L, L.w_gate, L.w_up, L.w_down, 0, std::size_t(c.moe.shared_hidden_dim), h, d, false);
    double g = 0;
    for (std::size_t i = 0; i < d; ++i) g += double(L.shared_expert_gate[i]) * h[i];
    for (std::size_t i = 0; i < d; ++i) out[i] += y[i] / (1.0 + std::exp(-g));
  }
  return out;
}

/// y, or rmsnorm(y) * norm when the layer has that post-norm.
inline vec post_norm(const vec& y, const std::vector<float>& norm, const model_config& c) {
  return norm.empty() ? y : rmsnorm(y, norm.data(), 0, y.size(), c.norm_eps);
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
    for (auto& e : x) e *= double(c.embedding_scale);  // Gemma: sqrt(hidden_size)
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
      const auto& L = w.layers[l];
      const auto h = rmsnorm(x, L.attn_norm.data(), 0, d, c.norm_eps);
      auto q = matvec(L.wq, h, q_dim), k = matvec(L.wk, h, kv_dim), v = matvec(L.wv, h, kv_dim);
      for (std::size_t i = 0; i < L.bq.size(); ++i) q[i] += L.bq[i];  // Qwen2's biases, before RoPE
      for (std::size_t i = 0; i < L.bk.size(); ++i) k[i] += L.bk[i];
      for (std::size_t i = 0; i < L.bv.size(); ++i) v[i] += L.bv[i];
      const bool norm = use_qk_norm && !L.q_norm.empty();
      const model_config rc = rope_config(c, l);
      for (int head = 0; head < c.num_heads; ++head) norm_and_rope(q, head * hd, L.q_norm, rc, int(p), norm);
      for (int head = 0; head < c.num_kv_heads; ++head) norm_and_rope(k, head * hd, L.k_norm, rc, int(p), norm);
      keys[l].push_back(k);
      values[l].push_back(v);
      // A sliding layer's query at p sees the keys at (p - window, p].
      const std::size_t first = c.layer_windowed(int(l)) && p + 1 > std::size_t(c.sliding_window)
                                    ? p + 1 - std::size_t(c.sliding_window) : 0;
      const double scaling = c.attention_scale > 0.0f ? c.attention_scale : 1.0 / std::sqrt(double(hd));
      vec attn(q_dim, 0.0);
      for (int head = 0; head < c.num_heads; ++head) {
        const std::size_t kvh = std::size_t(head / (c.num_heads / c.num_kv_heads));
        vec scores(p + 1, 0.0);
        double max_score = -1e300, sum = 0;
        for (std::size_t j = first; j <= p; ++j) {
          double dot = 0;
          for (std::size_t i = 0; i < hd; ++i) dot += q[head * hd + i] * keys[l][j][kvh * hd + i];
          scores[j] = dot * scaling;
          if (c.attn_softcap > 0.0f) scores[j] = c.attn_softcap * std::tanh(scores[j] / c.attn_softcap);
          max_score = std::max(max_score, scores[j]);
        }
        // gpt-oss's sink: a logit of the head's own in the softmax's denominator.
        const double sink = L.attn_sinks.empty() ? -1e300 : double(L.attn_sinks[std::size_t(head)]);
        max_score = std::max(max_score, sink);
        for (std::size_t j = first; j <= p; ++j) sum += (scores[j] = std::exp(scores[j] - max_score));
        if (!L.attn_sinks.empty()) sum += std::exp(sink - max_score);
        for (std::size_t j = first; j <= p; ++j)
          for (std::size_t i = 0; i < hd; ++i) attn[head * hd + i] += scores[j] / sum * values[l][j][kvh * hd + i];
      }
      auto o = matvec(L.wo, attn, d);
      for (std::size_t i = 0; i < L.bo.size(); ++i) o[i] += L.bo[i];  // gpt-oss's output bias
      o = post_norm(o, L.post_attn_norm, c);
      for (std::size_t i = 0; i < d; ++i) x[i] += o[i];
      const auto h2 = rmsnorm(x, L.ffn_norm.data(), 0, d, c.norm_eps);
      if (c.moe.enabled()) {
        const auto y = moe_block(L, c, h2);
        for (std::size_t i = 0; i < d; ++i) x[i] += y[i];
        continue;
      }
      auto gate = matvec(L.w_gate, h2, std::size_t(c.hidden_dim));
      const auto up = matvec(L.w_up, h2, std::size_t(c.hidden_dim));
      for (std::size_t i = 0; i < gate.size(); ++i) gate[i] = activate(c, gate[i], up[i]);
      const auto down = post_norm(matvec(L.w_down, gate, d), L.post_ffn_norm, c);
      for (std::size_t i = 0; i < d; ++i) x[i] += down[i];
    }
    out.push_back(rmsnorm(x, w.final_norm.data(), 0, d, c.norm_eps));
  }
  return out;
}

/// Logits after the last of `tokens`, in double precision, one token at a time.
inline vec naive_forward(const model_weights& w, const std::vector<token_id>& tokens, bool use_qk_norm) {
  auto logits = matvec(w.classifier_tensor(), naive_hidden_states(w, tokens, use_qk_norm).back(),
                       std::size_t(w.config.vocab_size));
  const double cap = w.config.final_softcap;  // Gemma 2
  if (cap > 0) {
    for (auto& l : logits) l = cap * std::tanh(l / cap);
  }
  return logits;
}

}  // namespace inflight::test
