#include "backends/kernel_views.hpp"

namespace inflight {
namespace {

const float* data_or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

/// A matrix as the kernels read it: its bytes, row stride and type (null data when empty).
kernels::cpu::weight_view view_of(const weight_tensor& t) {
  if (t.empty()) return {};
  return {t.bytes().data(), t.row_bytes(), t.dtype()};
}

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
  std::vector<kernels::cpu::llama_layer_view> views;
  for (const auto& l : weights.layers) {
    views.push_back({l.attn_norm.data(), view_of(l.wq), view_of(l.wk), view_of(l.wv), view_of(l.wo),
                     data_or_null(l.bq), data_or_null(l.bk), data_or_null(l.bv), l.ffn_norm.data(),
                     view_of(l.w_gate), view_of(l.w_down), view_of(l.w_up), data_or_null(l.q_norm),
                     data_or_null(l.k_norm)});
  }
  return views;
}

kernels::cpu::llama_weights_view to_weights_view(const model_weights& weights,
                                                 const std::vector<kernels::cpu::llama_layer_view>& layers) {
  return {view_of(weights.token_embedding), layers.data(), weights.final_norm.data(),
          view_of(weights.classifier_tensor())};
}

}  // namespace inflight
