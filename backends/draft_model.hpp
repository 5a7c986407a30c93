#pragma once
/// The `draft` drafter of speculative decoding: a second, smaller model of the target's
/// vocabulary (any format the loader reads: a smaller or more quantized sibling) on the
/// CPU backend, greedy, in a KV pool of its own. For each proposal it catches up on
/// what the sequence gained since its last one (the tokens its cache lacks: a prompt,
/// the kept tokens; a refuted draft is cut back to the common prefix), then decodes k
/// tokens, one step each. Its pool holds whole sequences; when it is full the sequence
/// used least recently leaves it (and is caught up again if it comes back).

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backends/cpu_backend.hpp"
#include "core/engine/spec/drafter.hpp"

namespace inflight {

struct draft_model_options {
  int block_size = 16;
  std::int64_t kv_memory_bytes = 64ll << 20;  ///< its KV pool
  int num_threads = 0;                        ///< 0 = one per physical core
  int max_context = 0;                        ///< the target's (0 = its own)
  int vocab_size = 0;                         ///< the target's: the draft model must have it (0 = any)
};

class draft_model_drafter final : public drafter {
 public:
  /// Fails when the vocabularies differ or the pool cannot hold one block.
  static result<std::unique_ptr<draft_model_drafter>> create(std::shared_ptr<const model_weights> weights,
                                                             const draft_model_options& options);
  /// The model at `path` (a llama2.c checkpoint, a GGUF file or a Hugging Face folder).
  static result<std::unique_ptr<draft_model_drafter>> load(const std::string& path, const draft_model_options& options);

  std::vector<token_id> propose(seq_id id, std::span<const token_id> tokens, int k) override;
  void forget(seq_id id) override;

  /// Forward steps run, and tokens fed through them (catch-up and drafts).
  std::uint64_t num_steps() const { return num_steps_; }
  std::uint64_t num_tokens_fed() const { return num_tokens_fed_; }
  int num_free_blocks() const { return int(free_.size()); }

 private:
  struct cache {
    std::vector<token_id> tokens;  ///< whose K/V its blocks hold, from position 0
    std::vector<block_id> blocks;
    std::uint64_t last_used = 0;
  };
  draft_model_drafter(std::unique_ptr<cpu_backend> backend, int max_context);
  /// Blocks for `num_positions` positions of `c`, taking them from the sequences used
  /// least recently when none are free; false when even that is not enough.
  bool try_reserve(seq_id id, cache& c, int num_positions);
  void release(cache& c);

  std::unique_ptr<cpu_backend> backend_;
  int max_context_;
  std::vector<block_id> free_;
  std::unordered_map<seq_id, cache> caches_;
  std::uint64_t clock_ = 0;
  std::uint64_t num_steps_ = 0, num_tokens_fed_ = 0;
};

}  // namespace inflight
