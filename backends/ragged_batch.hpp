#pragma once
/// A step plan flattened into the arrays the kernels read (see kernels/cpu/llama.hpp),
/// validated against the backend's bounds so that a bad plan is an error, never an
/// out-of-bounds access. Shared by every backend.

#include <cstdint>
#include <span>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/step/step_plan.hpp"
#include "kernels/cpu/llama.hpp"

namespace inflight {

struct ragged_batch_bounds {
  int vocab_size = 0;
  int num_blocks = 0;
  int block_size = 16;
  int max_context = 0;  ///< positions must stay below it (0 = no limit)
  int num_adapters = 0; ///< seq_step::adapter must be below it (or -1)
};

class ragged_batch {
 public:
  result<void> try_flatten(const step_plan& plan, const ragged_batch_bounds& bounds);
  /// Views the arrays of the last successful try_flatten.
  kernels::cpu::ragged_batch_view view() const;
  int num_logits() const { return int(logit_indices_.size()); }
  /// Named logit rows of the last flatten, over all sequences (see row_start()).
  int num_row_logits() const { return int(row_logit_ids_.size()); }
  /// The named rows of the i-th sequence that asked for some are
  /// [row_start()[i], row_start()[i + 1]) of the row logits, in its logit_rows order.
  const std::vector<int>& row_start() const { return row_start_; }
  /// Hidden outputs of the last flatten (one per seq_step with one, in plan order).
  int num_hidden() const { return int(hidden_start_.size()); }

 private:
  result<void> try_add(const seq_step& s, std::size_t index, const ragged_batch_bounds& bounds);
  result<void> try_add_rows(const seq_step& s, const ragged_batch_bounds& bounds);

  std::vector<std::int32_t> token_ids_, positions_, slots_, query_start_, block_tables_, logit_indices_;
  std::vector<std::int32_t> scored_indices_, row_logit_positions_, row_logit_ids_;
  std::vector<std::int32_t> hidden_start_, hidden_count_;
  std::vector<std::int32_t> adapters_;  ///< per token; empty when no sequence has one
  std::vector<int> row_start_;
  int block_table_stride_ = 1;
  int num_seqs_ = 0;
};

/// The named logit rows of a step, one entry per seq_step with logit_rows (plan order),
/// from the flat `values` of `batch`'s last flatten of `plan`.
std::vector<seq_row_logits> split_row_logits(const step_plan& plan, const ragged_batch& batch,
                                         std::span<const float> values);

/// The hidden outputs of a step, one entry per seq_step with one (plan order), from the
/// flat `values` [num_hidden x dim].
std::vector<seq_hidden> split_hidden(const step_plan& plan, std::span<const float> values, int dim);

}  // namespace inflight
