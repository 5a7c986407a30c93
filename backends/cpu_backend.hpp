#pragma once
/// The CPU backend: core's backend interface over kernels/cpu (fp32, own vector kernels
/// chosen for the CPU at run time). Owns the weights' kernel views, the paged KV memory,
/// the step workspace and the compute threads' settings.

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/kernel_views.hpp"
#include "backends/ragged_batch.hpp"
#include "core/engine/kv/block_pool.hpp"
#include "core/engine/step/backend.hpp"
#include "core/model/model_weights.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight {

struct cpu_backend_options {
  int num_threads = 0;       ///< compute threads; 0 = one per physical core
  bool pin_threads = false;  ///< pin them to cores (done by the thread that runs the first step)
  std::optional<kernels::cpu::cpu_isa> isa;  ///< kernel table; empty = the best this CPU runs
  kernels::cpu::kv_type kv_type = kernels::cpu::kv_type::f32;  ///< KV cache elements
};

class cpu_backend final : public backend {
 public:
  static result<std::unique_ptr<cpu_backend>> create(std::shared_ptr<const model_weights> weights,
                                                     const kv_cache_config& kv, const cpu_backend_options& options = {});

  result<step_result> execute(const step_plan& plan) override;
  /// Runs the forward pass only: logits [rows x vocab] in plan order, a row for each
  /// sampled sequence and for each tail token a seq_step asks for (num_tail_logits).
  result<std::span<const float>> forward(const step_plan& plan);
  /// The named logit rows of the last forward: every seq_step's logit_rows, in plan order.
  std::span<const float> row_logits() const { return row_logits_; }
  /// The hidden outputs of the last forward [outputs x dim]: every seq_step's, in plan order.
  std::span<const float> hidden() const { return hidden_; }

  const model_config& config() const override { return weights_->config; }
  int num_kv_blocks() const override { return num_blocks_; }
  int block_size() const override { return block_size_; }
  std::string name() const override { return "cpu"; }
  /// Adapters of this model's shape: their updates as the kernels read them.
  bool runs_adapters() const override { return true; }
  int num_threads() const { return forward_options_.num_threads; }
  kernels::cpu::cpu_isa isa() const { return forward_options_.kernels->isa; }
  /// Accumulates per-stage wall time of every later step into `times` (null: stop).
  void set_stage_times(kernels::cpu::stage_times* times) { forward_options_.times = times; }

 private:
  /// The views of the step's adapters (step_plan::adapters) for the kernels.
  result<void> bind_adapters(const step_plan& plan);
  cpu_backend(std::shared_ptr<const model_weights> weights, int num_blocks, int block_size,
              const cpu_backend_options& options);

  std::shared_ptr<const model_weights> weights_;
  int num_blocks_;
  int block_size_;
  kernels::cpu::llama_shape shape_;
  std::vector<kernels::cpu::llama_layer_view> layer_views_;
  std::vector<std::vector<std::byte>> k_cache_, v_cache_;
  kernels::cpu::kv_type kv_type_ = kernels::cpu::kv_type::f32;
  std::vector<std::byte*> k_ptrs_, v_ptrs_;
  kernels::cpu::llama_workspace workspace_;
  ragged_batch batch_;  // the current step, flattened
  std::vector<float> logits_;
  std::vector<float> row_logits_;
  std::vector<float> hidden_;
  kernels::cpu::forward_options forward_options_;
  std::vector<std::vector<std::array<kernels::cpu::lora_projection_view, kernels::cpu::num_lora_targets>>> adapter_layers_;
  std::vector<kernels::cpu::lora_adapter_view> adapter_views_;
  int max_lora_rank_ = 0;
  bool is_pin_pending_ = false;
};

}  // namespace inflight
