#pragma once
/// A decoder's shape and hyper-parameters: the description of its layers that both
/// backends read (families fill it: model_family.hpp).

#include <cstdint>
#include <string>

namespace inflight {

/// How RoPE pairs dimensions inside a head.
enum class rope_style {
  interleaved,  ///< pairs (2i, 2i+1): llama2.c checkpoints
  half,         ///< pairs (i, i + head_dim/2): Hugging Face "rotate_half"
};

/// How RoPE frequencies are stretched past the trained context.
enum class rope_scaling_type {
  none,
  llama3,  ///< long wavelengths slowed by `factor`, short ones kept, a smoothed band between
  linear,  ///< every frequency divided by `factor` (position interpolation)
  yarn,    ///< YaRN: linear below the band [beta_slow, beta_fast] rotations, extrapolated
           ///< above it, and cos / sin scaled by the attention factor
};

/// RoPE scaling ("rope_scaling" in config.json, rope.scaling.* in GGUF).
struct rope_scaling {
  rope_scaling_type type = rope_scaling_type::none;
  float factor = 8.0f;
  float low_freq_factor = 1.0f;   ///< llama3
  float high_freq_factor = 4.0f;  ///< llama3
  int original_max_position = 8192;
  float beta_fast = 32.0f;        ///< yarn: rotations over the original context
  float beta_slow = 1.0f;         ///< yarn
  float attention_factor = 0.0f;  ///< yarn: cos / sin scale; 0: 0.1 ln(factor) + 1

  bool enabled() const { return type != rope_scaling_type::none; }
};
const char* to_string(rope_scaling_type type);

/// How a mixture-of-experts layer picks its experts' weights from the router's logits.
enum class moe_gating { softmax, sigmoid };

/// A mixture-of-experts MLP: each token's router logits choose `experts_per_token` of
/// `num_experts` SwiGLU experts, whose outputs are summed with the gate weights; a shared
/// expert (Qwen2-MoE), when present, runs for every token, scaled by sigmoid(x . gate).
struct moe_config {
  int num_experts = 0;        ///< 0: a dense MLP
  int experts_per_token = 0;
  int expert_hidden_dim = 0;  ///< each expert's intermediate size
  moe_gating gating = moe_gating::softmax;
  bool normalize_weights = false;  ///< the chosen experts' weights rescaled to sum to 1
  int shared_hidden_dim = 0;       ///< the shared expert's intermediate size; 0: none

  bool enabled() const { return num_experts > 0; }
};

struct model_config {
  std::string architecture = "LlamaForCausalLM";
  int dim = 0;           ///< hidden size
  int hidden_dim = 0;    ///< MLP intermediate size
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;      ///< usually dim / num_heads
  int vocab_size = 0;
  int max_seq_len = 0;   ///< context length
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  rope_style rope = rope_style::interleaved;
  rope_scaling scaling;
  int rope_dims = 0;             ///< rotated dimensions of each head; 0: all (head_dim)
  bool tied_embeddings = true;   ///< classifier shares the token embedding
  bool attention_bias = false;   ///< q/k/v projections have biases (Qwen2)
  bool qk_norm = false;          ///< per-head RMSNorm on q and k before RoPE (Qwen3)
  moe_config moe;                ///< experts, when the MLP is a mixture of experts

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  /// Rotated dimensions per head.
  int rotary_dims() const { return rope_dims > 0 ? rope_dims : head_dim; }
  /// Intermediate size of the dense MLP each layer runs for every token: hidden_dim, or
  /// for a mixture of experts its shared expert's (0 without one).
  int dense_hidden_dim() const { return moe.enabled() ? moe.shared_hidden_dim : hidden_dim; }
  /// Number of parameters (weights), counting a tied classifier once.
  std::int64_t num_parameters() const;
  /// Parameters read for one token: num_parameters() less the experts it does not use.
  std::int64_t num_active_parameters() const;
};

}  // namespace inflight
