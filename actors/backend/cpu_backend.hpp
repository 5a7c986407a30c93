#pragma once
/// The CPU backend: core's backend interface over kernels/cpu (fp32, OpenBLAS).
/// Owns the weights' kernel views, the paged KV memory and the step workspace.

#include <memory>
#include <span>
#include <vector>

#include "actors/backend/kernel_views.hpp"
#include "actors/backend/ragged_batch.hpp"
#include "core/backend.hpp"
#include "core/kv/block_pool.hpp"
#include "core/model/model_weights.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight {

class cpu_backend final : public backend {
 public:
  static result<std::unique_ptr<cpu_backend>> create(std::shared_ptr<const model_weights> weights,
                                                     const kv_cache_config& kv);

  result<step_result> execute(const step_plan& plan) override;
  /// Runs the forward pass only: logits [num sampled seqs x vocab], in plan order.
  result<std::span<const float>> forward(const step_plan& plan);
  /// The named logit rows of the last forward: every seq_step's logit_rows, in plan order.
  std::span<const float> row_logits() const { return row_logits_; }

  const model_config& config() const override { return weights_->config; }
  int num_kv_blocks() const override { return num_blocks_; }
  int block_size() const override { return block_size_; }
  std::string name() const override { return "cpu"; }

 private:
  cpu_backend(std::shared_ptr<const model_weights> weights, int num_blocks, int block_size);

  std::shared_ptr<const model_weights> weights_;
  int num_blocks_;
  int block_size_;
  kernels::cpu::llama_shape shape_;
  std::vector<kernels::cpu::llama_layer_view> layer_views_;
  std::vector<std::vector<float>> k_cache_, v_cache_;
  std::vector<float*> k_ptrs_, v_ptrs_;
  kernels::cpu::llama_workspace workspace_;
  ragged_batch batch_;  // the current step, flattened
  std::vector<float> logits_;
  std::vector<float> row_logits_;
};

}  // namespace inflight
