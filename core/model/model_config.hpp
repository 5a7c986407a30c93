#pragma once
/// Llama-family decoder shape and hyper-parameters.

#include <cstdint>
#include <string>

namespace inflight {

/// How RoPE pairs dimensions inside a head.
enum class rope_style {
  interleaved,  ///< pairs (2i, 2i+1): llama2.c checkpoints
  half,         ///< pairs (i, i + head_dim/2): Hugging Face "rotate_half"
};

/// Llama-3 style frequency scaling ("rope_scaling": {"rope_type": "llama3", ...}).
struct rope_scaling {
  bool enabled = false;
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_position = 8192;
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
  bool tied_embeddings = true;   ///< classifier shares the token embedding
  bool attention_bias = false;   ///< q/k/v projections have biases (Qwen2)
  bool qk_norm = false;          ///< per-head RMSNorm on q and k before RoPE (Qwen3)

  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  /// Number of parameters (weights), counting a tied classifier once.
  std::int64_t num_parameters() const;
};

}  // namespace inflight
