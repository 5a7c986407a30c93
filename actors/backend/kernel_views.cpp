#include "actors/backend/kernel_views.hpp"

namespace inflight {
namespace {

const float* data_or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

kernels::cpu::llama_shape to_kernel_shape(const model_config& c) {
  kernels::cpu::llama_shape s;
  s.dim = c.dim;
  s.hidden_dim = c.hidden_dim;
  s.num_layers = c.num_layers;
  s.num_heads = c.num_heads;
  s.num_kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab_size = c.vocab_size;
  s.norm_eps = c.norm_eps;
  s.rope_theta = c.rope_theta;
  s.rope_interleaved = c.rope == rope_style::interleaved;
  if (c.scaling.enabled) {
    s.rope_factor = c.scaling.factor;
    s.rope_low_freq_factor = c.scaling.low_freq_factor;
    s.rope_high_freq_factor = c.scaling.high_freq_factor;
    s.rope_original_max_position = c.scaling.original_max_position;
  }
  return s;
}

std::vector<kernels::cpu::llama_layer_view> to_layer_views(const model_weights& weights) {
  using kernels::cpu::f32_weights;
  const auto& c = weights.config;
  const std::int64_t d = c.dim, qd = std::int64_t(c.num_heads) * c.head_dim, h = c.hidden_dim;
  std::vector<kernels::cpu::llama_layer_view> views;
  for (const auto& l : weights.layers) {
    views.push_back({l.attn_norm.data(), f32_weights(l.wq.data(), d), f32_weights(l.wk.data(), d),
                     f32_weights(l.wv.data(), d), f32_weights(l.wo.data(), qd), data_or_null(l.bq),
                     data_or_null(l.bk), data_or_null(l.bv), l.ffn_norm.data(), f32_weights(l.w_gate.data(), d),
                     f32_weights(l.w_down.data(), h), f32_weights(l.w_up.data(), d), data_or_null(l.q_norm),
                     data_or_null(l.k_norm)});
  }
  return views;
}

kernels::cpu::llama_weights_view to_weights_view(const model_weights& weights,
                                                 const std::vector<kernels::cpu::llama_layer_view>& layers) {
  using kernels::cpu::f32_weights;
  const std::int64_t d = weights.config.dim;
  return {f32_weights(weights.token_embedding.data(), d), layers.data(), weights.final_norm.data(),
          f32_weights(weights.classifier_data(), d)};
}

}  // namespace inflight
