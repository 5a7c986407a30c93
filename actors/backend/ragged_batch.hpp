#pragma once
/// A step plan flattened into the arrays the kernels read (see kernels/cpu/llama.hpp),
/// validated against the backend's bounds so that a bad plan is an error, never an
/// out-of-bounds access. Shared by every backend.

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/sched/step_plan.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight {

struct ragged_batch_bounds {
  int vocab_size = 0;
  int num_blocks = 0;
  int block_size = 16;
  int max_context = 0;  ///< positions must stay below it (0 = no limit)
};

class ragged_batch {
 public:
  result<void> try_flatten(const step_plan& plan, const ragged_batch_bounds& bounds);
  /// Views the arrays of the last successful try_flatten.
  kernels::cpu::ragged_batch_view view() const;
  int num_logits() const { return int(logit_indices_.size()); }

 private:
  result<void> try_add(const seq_step& s, std::size_t index, const ragged_batch_bounds& bounds);

  std::vector<std::int32_t> token_ids_, positions_, slots_, query_start_, block_tables_, logit_indices_;
  int block_table_stride_ = 1;
  int num_seqs_ = 0;
};

}  // namespace inflight
