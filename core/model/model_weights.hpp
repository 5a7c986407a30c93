#pragma once
/// The weights of a Llama-family decoder. Matrices are typed (`weight_tensor`: fp32,
/// fp16, bf16 or GGUF's quantized blocks, owned or mapped), row-major [out x in] like
/// PyTorch's Linear; norms and biases are small and always fp32.

#include <array>
#include <vector>

#include "core/model/model_config.hpp"
#include "core/model/weight_tensor.hpp"

namespace inflight {

struct layer_weights {
  std::vector<float> attn_norm;  ///< [dim]
  weight_tensor wq;              ///< [q_dim x dim]
  weight_tensor wk;              ///< [kv_dim x dim]
  weight_tensor wv;              ///< [kv_dim x dim]
  weight_tensor wo;              ///< [dim x q_dim]
  std::vector<float> bq, bk, bv; ///< empty unless config.attention_bias
  std::vector<float> q_norm, k_norm; ///< [head_dim] each; empty unless config.qk_norm
  std::vector<float> ffn_norm;   ///< [dim]
  std::vector<float> post_attn_norm, post_ffn_norm;  ///< [dim] each; empty unless config.post_norms
  weight_tensor w_gate;          ///< [hidden x dim]  (llama2.c w1); a mixture's shared expert
  weight_tensor w_down;          ///< [dim x hidden]  (llama2.c w2)
  weight_tensor w_up;            ///< [hidden x dim]  (llama2.c w3)
  // A mixture of experts (config.moe): the router, and the experts' matrices stacked as
  // GGUF stores them, expert e's rows at [e * rows / num_experts, (e + 1) * rows / num_experts).
  weight_tensor router;          ///< [num_experts x dim]
  weight_tensor gate_exps;       ///< [num_experts * expert_hidden x dim]
  weight_tensor up_exps;         ///< [num_experts * expert_hidden x dim]
  weight_tensor down_exps;       ///< [num_experts * dim x expert_hidden]
  std::vector<float> shared_expert_gate;  ///< [dim]: sigmoid(x . it) scales the shared expert; empty: 1
  // gpt-oss (empty elsewhere): sink logits [num_heads], the output projection's bias [dim],
  // the router's [num_experts], and the experts' stacked like their matrices' rows.
  std::vector<float> attn_sinks, bo, router_bias;
  std::vector<float> gate_exps_bias, up_exps_bias;  ///< [num_experts * expert_hidden]
  std::vector<float> down_exps_bias;                ///< [num_experts * dim]
};

struct model_weights {
  model_config config;
  weight_tensor token_embedding;  ///< [vocab x dim]
  std::vector<layer_weights> layers;
  std::vector<float> final_norm;  ///< [dim]
  weight_tensor classifier;       ///< [vocab x dim]; empty when tied

  const weight_tensor& classifier_tensor() const { return classifier.empty() ? token_embedding : classifier; }
};

/// Every matrix of a layer, in a fixed order (for code that treats them alike); those a
/// layer lacks (dense MLP or experts) are empty.
inline std::array<const weight_tensor*, 11> matrices_of(const layer_weights& l) {
  return {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_down, &l.w_up, &l.router, &l.gate_exps, &l.up_exps, &l.down_exps};
}
inline std::array<weight_tensor*, 11> matrices_of(layer_weights& l) {
  return {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_down, &l.w_up, &l.router, &l.gate_exps, &l.up_exps, &l.down_exps};
}

/// The storage types the model's matrices use, each once, in weight_dtype order.
std::vector<weight_dtype> weight_dtypes_of(const model_weights& weights);

/// The same model with every matrix decoded to fp32 (for a backend that runs only fp32).
result<model_weights> try_decode_to_f32(const model_weights& weights);

}  // namespace inflight
