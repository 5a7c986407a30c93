#include "core/model/model_config.hpp"

#include <algorithm>
#include <cmath>

namespace inflight {

const char* to_string(rope_scaling_type type) {
  switch (type) {
    case rope_scaling_type::none: return "none";
    case rope_scaling_type::llama3: return "llama3";
    case rope_scaling_type::linear: return "linear";
    case rope_scaling_type::yarn: return "yarn";
    case rope_scaling_type::longrope: return "longrope";
  }
  return "?";
}

const char* to_string(mlp_activation activation) {
  switch (activation) {
    case mlp_activation::silu: return "silu";
    case mlp_activation::gelu_tanh: return "gelu_tanh";
    case mlp_activation::swiglu_oai: return "swiglu_oai";
  }
  return "?";
}

float rope_scaling::cos_sin_scale() const {
  if (attention_factor != 0.0f && (type == rope_scaling_type::yarn || type == rope_scaling_type::longrope)) {
    return attention_factor;
  }
  if (factor <= 1.0f) return 1.0f;
  if (type == rope_scaling_type::yarn) return 0.1f * std::log(factor) + 1.0f;
  if (type == rope_scaling_type::longrope) return std::sqrt(1.0f + std::log(factor) / std::log(float(original_max_position)));
  return 1.0f;
}

namespace {

/// Parameters of a layer's experts: the router and `num_experts` SwiGLU experts.
std::int64_t expert_parameters(const model_config& c, int num_experts) {
  return 3 * std::int64_t(c.dim) * c.moe.expert_hidden_dim * num_experts;
}

}  // namespace

std::int64_t model_config::num_parameters() const {
  const std::int64_t d = dim, h = dense_hidden_dim(), q = q_dim(), kv = kv_dim();
  std::int64_t per_layer = 2 * d + d * q + 2 * d * kv + q * d + 3 * d * h;
  if (attention_bias) per_layer += q + 2 * kv;
  if (qk_norm) per_layer += 2 * std::int64_t(head_dim);
  if (post_norms) per_layer += 2 * d;
  if (attention_sinks) per_layer += num_heads;
  if (output_bias) per_layer += d;
  if (moe.enabled()) {
    per_layer += std::int64_t(moe.num_experts) * d + expert_parameters(*this, moe.num_experts);
    if (expert_biases) per_layer += moe.num_experts * (1 + 2 * std::int64_t(moe.expert_hidden_dim) + d);
    if (moe.shared_hidden_dim > 0) per_layer += d;  // the shared expert's gate
  }
  std::int64_t total = std::int64_t(vocab_size) * d + num_layers * per_layer + d;
  if (!tied_embeddings) total += std::int64_t(vocab_size) * d;
  return total;
}

std::int64_t model_config::kv_positions_read(std::int64_t context) const {
  std::int64_t total = 0;
  for (int l = 0; l < num_layers; ++l) total += layer_windowed(l) ? std::min<std::int64_t>(context, sliding_window) : context;
  return total;
}

std::int64_t model_config::num_active_parameters() const {
  if (!moe.enabled()) return num_parameters();
  return num_parameters() - num_layers * expert_parameters(*this, moe.num_experts - moe.experts_per_token);
}

}  // namespace inflight
