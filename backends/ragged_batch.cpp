#include "backends/ragged_batch.hpp"

#include <algorithm>
#include <string>

namespace inflight {

result<void> ragged_batch::try_flatten(const step_plan& plan, const ragged_batch_bounds& bounds) {
  token_ids_.clear();
  positions_.clear();
  slots_.clear();
  logit_indices_.clear();
  scored_indices_.clear();
  row_logit_positions_.clear();
  row_logit_ids_.clear();
  hidden_start_.clear();
  hidden_count_.clear();
  adapters_.clear();
  row_start_.assign(1, 0);
  query_start_.assign(1, 0);
  block_table_stride_ = 1;
  for (const auto& s : plan.seqs) block_table_stride_ = std::max<int>(block_table_stride_, int(s.block_table.size()));
  block_tables_.assign(plan.seqs.size() * std::size_t(block_table_stride_), 0);
  num_seqs_ = int(plan.seqs.size());
  for (std::size_t i = 0; i < plan.seqs.size(); ++i) {
    if (auto ok = try_add(plan.seqs[i], i, bounds); !ok) return ok;
  }
  // Each token's LoRA adapter, only when some sequence has one.
  const bool has_adapter = std::any_of(plan.seqs.begin(), plan.seqs.end(), [](const seq_step& s) { return s.adapter >= 0; });
  if (!has_adapter) return {};
  for (const auto& s : plan.seqs) {
    if (s.adapter < -1 || s.adapter >= bounds.num_adapters)
      return make_error(errc::invalid_argument, "step plan: sequence " + std::to_string(s.id) + " asks for LoRA adapter " +
                                                    std::to_string(s.adapter) + " of " + std::to_string(bounds.num_adapters));
    adapters_.insert(adapters_.end(), s.tokens.size(), s.adapter);
  }
  return {};
}

result<void> ragged_batch::try_add(const seq_step& s, std::size_t index, const ragged_batch_bounds& b) {
  const auto end = std::int64_t(s.start_position) + std::int64_t(s.tokens.size());
  if (s.tokens.empty() || s.start_position < 0 || end > std::int64_t(s.block_table.size()) * b.block_size) {
    return make_error(errc::invalid_argument, "step plan: sequence " + std::to_string(s.id) +
                                                  " has no tokens or its block table does not cover them");
  }
  if (b.max_context > 0 && end > b.max_context) {
    return make_error(errc::invalid_argument, "step plan: sequence " + std::to_string(s.id) +
                                                  " runs past the context of " + std::to_string(b.max_context));
  }
  for (const auto blk : s.block_table) {
    if (blk < 0 || blk >= b.num_blocks) return make_error(errc::invalid_argument, "step plan: bad block id");
  }
  std::copy(s.block_table.begin(), s.block_table.end(),
            block_tables_.begin() + std::ptrdiff_t(index) * block_table_stride_);
  for (std::size_t j = 0; j < s.tokens.size(); ++j) {
    const int pos = s.start_position + int(j);
    if (s.tokens[j] < 0 || s.tokens[j] >= b.vocab_size) {
      return make_error(errc::invalid_argument, "step plan: token id " + std::to_string(s.tokens[j]) +
                                                    " outside the vocabulary");
    }
    token_ids_.push_back(s.tokens[j]);
    positions_.push_back(pos);
    slots_.push_back(s.block_table[std::size_t(pos / b.block_size)] * b.block_size + pos % b.block_size);
  }
  query_start_.push_back(std::int32_t(token_ids_.size()));
  if (s.num_tail_logits < 0 || s.num_tail_logits > int(s.tokens.size()) || (s.do_sample && s.num_tail_logits > 0)) {
    return make_error(errc::invalid_argument, "step plan: sequence " + std::to_string(s.id) + " asks for " +
                                                  std::to_string(s.num_tail_logits) + " tail logits");
  }
  if (s.num_draft < 0 || s.num_draft >= int(s.tokens.size()) || (s.num_draft > 0 && !s.do_sample)) {
    return make_error(errc::invalid_argument, "step plan: sequence " + std::to_string(s.id) + " has " +
                                                  std::to_string(s.num_draft) + " drafted tokens of " +
                                                  std::to_string(s.tokens.size()));
  }
  for (int j = s.num_sample_rows(); j > 0; --j) logit_indices_.push_back(std::int32_t(token_ids_.size()) - j);
  for (int j = s.num_tail_logits; j > 0; --j) logit_indices_.push_back(std::int32_t(token_ids_.size()) - j);
  if (s.hidden != hidden_output::none) {
    const auto end = std::int32_t(token_ids_.size()), size = std::int32_t(s.tokens.size());
    hidden_start_.push_back(s.hidden == hidden_output::last ? end - 1 : end - size);
    hidden_count_.push_back(s.hidden == hidden_output::sum ? size : 1);
  }
  return try_add_rows(s, b);
}

result<void> ragged_batch::try_add_rows(const seq_step& s, const ragged_batch_bounds& b) {
  if (s.logit_rows.empty()) return {};
  for (const auto row : s.logit_rows) {
    if (row < 0 || row >= b.vocab_size) {
      return make_error(errc::invalid_argument, "step plan: logit row " + std::to_string(row) +
                                                    " outside the vocabulary");
    }
    row_logit_positions_.push_back(std::int32_t(scored_indices_.size()));
    row_logit_ids_.push_back(row);
  }
  scored_indices_.push_back(std::int32_t(token_ids_.size()) - 1);
  row_start_.push_back(int(row_logit_ids_.size()));
  return {};
}

kernels::cpu::ragged_batch_view ragged_batch::view() const {
  kernels::cpu::ragged_batch_view b;
  b.num_tokens = int(token_ids_.size());
  b.token_ids = token_ids_.data();
  b.positions = positions_.data();
  b.slot_mapping = slots_.data();
  b.num_seqs = num_seqs_;
  b.query_start = query_start_.data();
  b.block_tables = block_tables_.data();
  b.block_table_stride = block_table_stride_;
  b.num_logits = int(logit_indices_.size());
  b.logit_indices = logit_indices_.data();
  b.num_scored = int(scored_indices_.size());
  b.scored_indices = scored_indices_.data();
  b.num_row_logits = int(row_logit_ids_.size());
  b.row_logit_positions = row_logit_positions_.data();
  b.row_logit_ids = row_logit_ids_.data();
  b.num_hidden = int(hidden_start_.size());
  b.hidden_start = hidden_start_.data();
  b.hidden_count = hidden_count_.data();
  b.adapters = adapters_.empty() ? nullptr : adapters_.data();
  return b;
}

std::vector<seq_row_logits> split_row_logits(const step_plan& plan, const ragged_batch& batch,
                                         std::span<const float> values) {
  std::vector<seq_row_logits> out;
  const auto& start = batch.row_start();
  for (const auto& s : plan.seqs) {
    if (s.logit_rows.empty()) continue;
    const std::size_t i = out.size();
    out.push_back({s.id, std::vector<float>(values.begin() + start[i], values.begin() + start[i + 1])});
  }
  return out;
}

std::vector<seq_hidden> split_hidden(const step_plan& plan, std::span<const float> values, int dim) {
  std::vector<seq_hidden> out;
  for (const auto& s : plan.seqs) {
    if (s.hidden == hidden_output::none) continue;
    const auto at = values.begin() + std::ptrdiff_t(out.size()) * dim;
    out.push_back({s.id, std::vector<float>(at, at + dim)});
  }
  return out;
}

}  // namespace inflight
