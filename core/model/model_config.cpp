#include "core/model/model_config.hpp"

namespace inflight {

std::int64_t model_config::num_parameters() const {
  const std::int64_t d = dim, h = hidden_dim, q = q_dim(), kv = kv_dim();
  std::int64_t per_layer = 2 * d + d * q + 2 * d * kv + q * d + 3 * d * h;
  if (attention_bias) per_layer += q + 2 * kv;
  if (qk_norm) per_layer += 2 * std::int64_t(head_dim);
  std::int64_t total = std::int64_t(vocab_size) * d + num_layers * per_layer + d;
  if (!tied_embeddings) total += std::int64_t(vocab_size) * d;
  return total;
}

}  // namespace inflight
