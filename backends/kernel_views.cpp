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
  using kernels::cpu::rope_scaling_kind;
  kernels::cpu::llama_shape s;
  s.dim = c.dim;
  s.hidden_dim = c.dense_hidden_dim();
  s.num_layers = c.num_layers;
  s.num_heads = c.num_heads;
  s.num_kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab_size = c.vocab_size;
  s.norm_eps = c.norm_eps;
  s.rope_theta = c.rope_theta;
  s.rope_interleaved = c.rope == rope_style::interleaved;
  s.rope_dims = c.rope_dims;
  const auto& r = c.scaling;
  constexpr rope_scaling_kind kinds[] = {rope_scaling_kind::none, rope_scaling_kind::llama3, rope_scaling_kind::linear,
                                         rope_scaling_kind::yarn, rope_scaling_kind::none};  // longrope: pair factors
  s.rope_scaling = kinds[int(r.type)];
  if (r.enabled()) {
    s.rope_factor = r.factor;
    s.rope_low_freq_factor = r.low_freq_factor;
    s.rope_high_freq_factor = r.high_freq_factor;
    s.rope_original_max_position = r.original_max_position;
    s.rope_beta_fast = r.beta_fast;
    s.rope_beta_slow = r.beta_slow;
  }
  s.rope_mscale = r.cos_sin_scale();
  if (r.type == rope_scaling_type::longrope) s.rope_pair_factors = r.pair_factors().data();
  s.num_experts = c.moe.num_experts;
  s.experts_per_token = c.moe.experts_per_token;
  s.expert_hidden_dim = c.moe.expert_hidden_dim;
  s.expert_sigmoid = c.moe.gating == moe_gating::sigmoid;
  s.expert_normalize = c.moe.normalize_weights;
  s.sliding_window = c.sliding_window;
  s.window_period = c.window_period;
  s.rope_local_theta = c.rope_local_theta;
  constexpr kernels::cpu::mlp_kind activations[] = {kernels::cpu::mlp_kind::silu, kernels::cpu::mlp_kind::gelu_tanh,
                                                    kernels::cpu::mlp_kind::swiglu_oai};
  s.activation = activations[int(c.activation)];
  s.embedding_scale = c.embedding_scale;
  s.attention_scale = c.attention_scale;
  s.attn_softcap = c.attn_softcap;
  s.final_softcap = c.final_softcap;
  return s;
}

std::vector<kernels::cpu::llama_layer_view> to_layer_views(const model_weights& weights) {
  std::vector<kernels::cpu::llama_layer_view> views;
  for (const auto& l : weights.layers) {
    kernels::cpu::llama_layer_view v;
    v.attn_norm = l.attn_norm.data();
    v.wq = view_of(l.wq);
    v.wk = view_of(l.wk);
    v.wv = view_of(l.wv);
    v.wo = view_of(l.wo);
    v.bq = data_or_null(l.bq);
    v.bk = data_or_null(l.bk);
    v.bv = data_or_null(l.bv);
    v.ffn_norm = l.ffn_norm.data();
    v.post_attn_norm = data_or_null(l.post_attn_norm);
    v.post_ffn_norm = data_or_null(l.post_ffn_norm);
    v.w_gate = view_of(l.w_gate);
    v.w_down = view_of(l.w_down);
    v.w_up = view_of(l.w_up);
    v.q_norm = data_or_null(l.q_norm);
    v.k_norm = data_or_null(l.k_norm);
    v.router = view_of(l.router);
    v.gate_exps = view_of(l.gate_exps);
    v.up_exps = view_of(l.up_exps);
    v.down_exps = view_of(l.down_exps);
    v.shared_expert_gate = data_or_null(l.shared_expert_gate);
    v.sinks = data_or_null(l.attn_sinks);
    v.bo = data_or_null(l.bo);
    v.router_bias = data_or_null(l.router_bias);
    v.gate_exps_bias = data_or_null(l.gate_exps_bias);
    v.up_exps_bias = data_or_null(l.up_exps_bias);
    v.down_exps_bias = data_or_null(l.down_exps_bias);
    views.push_back(v);
  }
  return views;
}

kernels::cpu::llama_weights_view to_weights_view(const model_weights& weights,
                                                 const std::vector<kernels::cpu::llama_layer_view>& layers) {
  return {view_of(weights.token_embedding), layers.data(), weights.final_norm.data(),
          view_of(weights.classifier_tensor())};
}

}  // namespace inflight
