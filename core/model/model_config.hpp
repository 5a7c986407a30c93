#pragma once
/// A decoder's shape and hyper-parameters: the description of its layers that both
/// backends read (families fill it: model_family.hpp).

#include <cstdint>
#include <string>
#include <vector>

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
  longrope,  ///< LongRoPE (Phi-3): each pair's frequency divided by its own factor, cos /
             ///< sin scaled by the attention factor
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
  float attention_factor = 0.0f;  ///< yarn: cos / sin scale; 0: 0.1 ln(factor) + 1;
                                  ///< longrope: 0: sqrt(1 + ln(factor) / ln(original))
  /// longrope: one factor per rotary pair for contexts up to the original one, and past it.
  std::vector<float> short_factor, long_factor;
  /// longrope: which factors the served context takes (chosen at load, as llama.cpp does:
  /// the long ones when the context exceeds original_max_position).
  bool use_long_factor = true;

  bool enabled() const { return type != rope_scaling_type::none; }
  /// longrope: the factors in use.
  const std::vector<float>& pair_factors() const { return use_long_factor ? long_factor : short_factor; }
  /// The scale of cos and sin: YaRN's and LongRoPE's attention factor (stated, or their
  /// defaults from factor and original context), 1 for the others.
  float cos_sin_scale() const;
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

/// The activation of the gated MLP: act(x W_gate) * (x W_up).
enum class mlp_activation {
  silu,        ///< SwiGLU (Llama, Qwen, Phi)
  gelu_tanh,   ///< GeGLU with GELU's tanh approximation (Gemma)
  swiglu_oai,  ///< gpt-oss: g = min(gate, 7), u = clamp(up, -7, 7), g sigmoid(1.702 g) (u + 1)
};
const char* to_string(mlp_activation activation);

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
  mlp_activation activation = mlp_activation::silu;
  // Sliding-window attention: a windowed layer's query at position p reads the keys at
  // (p - sliding_window, p]; the others read every key. Gemma 2 and 3 interleave them.
  int sliding_window = 0;  ///< 0: every layer reads the whole context
  /// 0: every layer is windowed; n: layer l is windowed unless l % n == n - 1 (Gemma 2: 2,
  /// Gemma 3: 6: five windowed layers, then a global one).
  int window_period = 0;
  /// RoPE base of the windowed layers, which then run unscaled (Gemma 3's local layers);
  /// 0: they rotate like the others.
  float rope_local_theta = 0.0f;
  // Gemma's additions (the defaults leave a Llama layer as it is).
  float embedding_scale = 1.0f;  ///< token embeddings are multiplied by it (Gemma: sqrt(dim))
  float attention_scale = 0.0f;  ///< scores are q . k times it; 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;     ///< scores become c * tanh(s / c) (Gemma 2); 0: none
  float final_softcap = 0.0f;    ///< logits become c * tanh(l / c) (Gemma 2); 0: none
  /// The attention's and the MLP's outputs are RMS-normed before they join the residual
  /// (Gemma 2 and 3: post_attention_layernorm, post_feedforward_layernorm).
  bool post_norms = false;
  // gpt-oss's additions.
  bool attention_sinks = false;  ///< a learned logit per head joins every softmax's denominator
  bool output_bias = false;      ///< the attention's output projection has a bias
  bool expert_biases = false;    ///< the router and every expert's matrices have biases

  int q_dim() const { return num_heads * head_dim; }
  /// Whether layer l attends through the sliding window.
  bool layer_windowed(int l) const {
    return sliding_window > 0 && (window_period <= 0 || l % window_period != window_period - 1);
  }
  /// Whether any layer reads the whole context.
  bool has_global_layers() const { return sliding_window == 0 || window_period > 0; }
  /// Positions a decode step at `context` reads from the KV cache, summed over layers:
  /// the whole context in a global layer, at most the window in a windowed one.
  std::int64_t kv_positions_read(std::int64_t context) const;
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
