#pragma once
/// The CUDA backend: core's backend interface over kernels/cuda (bf16 weights and
/// activations, fp32 accumulation, cuBLAS GEMMs, paged attention, decode graphs).
/// Raw-greedy rows (is_raw_greedy) are sampled on the GPU (only token ids and logprobs
/// come back), and with device_grammar_mask so are greedy rows whose only processor is a
/// grammar mask (their bitmask goes up); rows that need penalties, logit_bias, a grammar
/// mask otherwise, temperature sampling or top logprobs are copied to the host and go
/// through core's sampler, so seeded draws and constrained outputs match the CPU backend's.
/// Built only where nvcc is found (INFLIGHT_HAS_CUDA).

#ifdef INFLIGHT_HAS_CUDA

#include <memory>
#include <span>
#include <vector>

#include "backends/ragged_batch.hpp"
#include "core/engine/step/backend.hpp"
#include "core/model/model_weights.hpp"
#include "kernels/cuda/llama_runner.hpp"

namespace inflight {

struct cuda_backend_options {
  int block_size = 16;
  int num_kv_blocks = 0;                ///< > 0: exactly this many; else sized from the free memory
  double gpu_memory_utilization = 0.9;  ///< share of the device memory the process may hold
  int max_num_seqs = 64;                ///< workspace and graph sizes (grown on demand)
  int max_num_batched_tokens = 512;
  int max_context = 0;                  ///< 0 = the model's max_seq_len (4096 when unknown)
  bool use_graphs = true;               ///< CUDA graphs for decode-only steps
  /// Decode and prefill attention kernels (head shapes the mma kernels do not take fall
  /// back to grouped / tiled).
  kernels::cuda::decode_kernel decode_attention = kernels::cuda::decode_kernel::grouped;
  kernels::cuda::prefill_kernel prefill_attention = kernels::cuda::prefill_kernel::mma;
  bool use_fp16 = false;                ///< fp16 instead of bf16 storage
  /// Matrices expanded to bf16/fp16 on upload, q8_0 / q4_0 / q4_k / q6_k kept in their
  /// GGUF blocks, or the layers' matrices in FP8 E4M3 (engine.cuda_weights = "expand" |
  /// "file" | "fp8"; "file" and "fp8" not yet verified on a GPU).
  kernels::cuda::weight_format weights = kernels::cuda::weight_format::expand;
  /// Greedy rows under a grammar mask (is_masked_greedy) sampled on the device from an
  /// uploaded bitmask instead of copying their logits to the host
  /// (engine.cuda_grammar_mask = "device", the default; "host" copies them).
  bool device_grammar_mask = true;
  int device = 0;
};

class cuda_backend final : public backend {
 public:
  static result<std::unique_ptr<cuda_backend>> create(std::shared_ptr<const model_weights> weights,
                                                      const cuda_backend_options& options);

  result<step_result> execute(const step_plan& plan) override;
  /// Runs the forward pass and copies the logits [num sampled seqs x vocab], in plan order.
  result<std::span<const float>> forward(const step_plan& plan);
  /// The named logit rows of the last step: every seq_step's logit_rows, in plan order.
  std::span<const float> row_logits() const { return row_logits_; }

  const model_config& config() const override { return weights_->config; }
  int num_kv_blocks() const override { return runner_->num_kv_blocks(); }
  int block_size() const override { return runner_->block_size(); }
  std::string name() const override { return "cuda"; }
  /// Whether the last step replayed a CUDA graph (decode-only steps).
  bool last_step_used_graph() const { return runner_->last_used_graph(); }
  /// Bytes of GPU memory the weight matrices take.
  std::int64_t weight_bytes() const { return runner_->weight_bytes(); }

 private:
  cuda_backend(std::shared_ptr<const model_weights> weights, std::unique_ptr<kernels::cuda::llama_runner> runner,
               bool device_grammar_mask);
  /// Where a sampled row is sampled.
  enum class row_path { greedy, masked_greedy, host };
  row_path path_of(const seq_step& s) const;
  result<void> run(const step_plan& plan);

  std::shared_ptr<const model_weights> weights_;
  std::unique_ptr<kernels::cuda::llama_runner> runner_;
  ragged_batch batch_;  // the current step, flattened
  std::vector<std::int32_t> greedy_tokens_;
  std::vector<float> greedy_logprobs_, logits_, row_logits_;
  bool device_grammar_mask_ = false;
  std::vector<int> masked_rows_;               // logit rows sampled under a mask on the device
  std::vector<std::uint64_t> masked_words_;    // their masks, padded to the vocabulary
  std::vector<std::int32_t> masked_tokens_;
  std::vector<float> masked_logprobs_;
};

}  // namespace inflight

#endif  // INFLIGHT_HAS_CUDA
