#pragma once
/// The `draft` drafter's model: a second, smaller model of the target's vocabulary (any
/// format the loader reads: a smaller or more quantized sibling) on the CPU backend. The
/// executor actor holds it beside the target's backend and runs the scheduler's draft
/// plans on it (run_draft_plan: greedy, several sequences in one ragged step); its K/V
/// pool is as large as the KV owner's draft space, whose blocks the tables name
/// (kv_manager's draft space, granted by the kv-allocator actor).

#include <cstdint>
#include <memory>
#include <string>

#include "backends/cpu_backend.hpp"
#include "core/engine/spec/draft_plan.hpp"

namespace inflight {

struct draft_model_options {
  int block_size = 16;                        ///< the target's: one block size in both spaces
  std::int64_t kv_memory_bytes = 64ll << 20;  ///< its KV pool (speculative.draft_kv_memory)
  int num_threads = 0;                        ///< 0 = one per physical core
  int max_context = 0;                        ///< the target's (0 = its own)
  int vocab_size = 0;                         ///< the target's: the draft model must have it (0 = any)
};

class draft_model {
 public:
  /// Fails when the vocabularies differ or the pool cannot hold one block.
  static result<std::unique_ptr<draft_model>> create(std::shared_ptr<const model_weights> weights,
                                                     const draft_model_options& options);
  /// The model at `path` (a llama2.c checkpoint, a GGUF file or a Hugging Face folder).
  static result<std::unique_ptr<draft_model>> load(const std::string& path, const draft_model_options& options);

  /// Blocks of its KV pool: the draft space's size.
  int num_kv_blocks() const { return backend_->num_kv_blocks(); }
  /// The longest sequence it takes (its own context, at most the target's).
  int max_context() const { return max_context_; }
  /// Drafts for every sequence of `plan` (run_draft_plan on its backend).
  result<draft_result> run(const draft_plan& plan);

  /// Forward steps run, and tokens fed through them (catch-ups and drafts).
  std::uint64_t num_steps() const { return num_steps_; }
  std::uint64_t num_tokens_fed() const { return num_tokens_fed_; }

 private:
  draft_model(std::unique_ptr<cpu_backend> backend, int max_context)
      : backend_(std::move(backend)), max_context_(max_context) {}

  std::unique_ptr<cpu_backend> backend_;
  int max_context_;
  std::uint64_t num_steps_ = 0, num_tokens_fed_ = 0;
};

}  // namespace inflight
