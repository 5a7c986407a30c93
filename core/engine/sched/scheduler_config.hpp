#pragma once
/// Limits of the scheduler's iteration loop.

#include <cstdint>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/request/slo_targets.hpp"
#include "core/engine/spec/spec_config.hpp"

namespace inflight {

struct scheduler_config {
  int max_num_batched_tokens = 512;  ///< token budget of one step (decodes + prompt chunks)
  int max_num_seqs = 64;             ///< most sequences in one step and most running at once
  /// Most distinct LoRA adapters in one step (lora.max_loras_per_step; 0 = no limit): a
  /// sequence whose adapter would pass it waits for a later step.
  int max_loras_per_step = 0;
  /// The model's context length: a sequence reaching it finishes with reason length.
  /// 0 = limited only by the KV pool. The effective limit is never above the pool's
  /// capacity, so a lone sequence always fits.
  int max_seq_len = 0;
  /// End-of-sequence tokens of the model: finish with reason stop unless ignore_eos.
  std::vector<token_id> eos_token_ids;
  /// Seeds the sampling RNG of requests that bring none (mixed with the sequence id).
  std::uint64_t seed = 0;
  /// Hash every full block so the KV manager can reuse cached prefixes; off, no hash
  /// is computed and nothing is cached.
  bool enable_prefix_caching = true;
  /// Targets of a request that sets none ([scheduler] ttft_target_ms / tpot_target_ms).
  slo_targets default_targets;
  /// Speculative decoding ([speculative]): off unless a method is set, or a request asks.
  speculative_config speculative;
};

}  // namespace inflight
