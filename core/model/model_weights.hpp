#pragma once
/// fp32 weights of a Llama-family decoder, row-major [out x in] like PyTorch's Linear.

#include <vector>

#include "core/model/model_config.hpp"

namespace inflight {

struct layer_weights {
  std::vector<float> attn_norm;  ///< [dim]
  std::vector<float> wq;         ///< [q_dim x dim]
  std::vector<float> wk;         ///< [kv_dim x dim]
  std::vector<float> wv;         ///< [kv_dim x dim]
  std::vector<float> wo;         ///< [dim x q_dim]
  std::vector<float> bq, bk, bv; ///< empty unless config.attention_bias
  std::vector<float> q_norm, k_norm; ///< [head_dim] each; empty unless config.qk_norm
  std::vector<float> ffn_norm;   ///< [dim]
  std::vector<float> w_gate;     ///< [hidden x dim]  (llama2.c w1)
  std::vector<float> w_down;     ///< [dim x hidden]  (llama2.c w2)
  std::vector<float> w_up;       ///< [hidden x dim]  (llama2.c w3)
};

struct model_weights {
  model_config config;
  std::vector<float> token_embedding;  ///< [vocab x dim]
  std::vector<layer_weights> layers;
  std::vector<float> final_norm;       ///< [dim]
  std::vector<float> classifier;       ///< [vocab x dim]; empty when tied

  const float* classifier_data() const {
    return classifier.empty() ? token_embedding.data() : classifier.data();
  }
};

}  // namespace inflight
