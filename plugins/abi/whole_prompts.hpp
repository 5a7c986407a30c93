#pragma once
// Shared pieces of the policies that prefill prompts whole (prefill_first, orca, tgi):
// the plan of which waiting sequences to admit this step, and the KV accounting of
// Orca and TGI, which reserve at admission every block a request can ever need.
// C++ only, not installed.

#include <algorithm>
#include <cmath>
#include <vector>

#include "policy_helpers.hpp"

namespace inflight::policies {

/// Parses a non-negative, finite real setting.
inline bool parse_ratio(const char* text, double& out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(value) || value < 0) return false;
  out = value;
  return true;
}

/// KV blocks `seq` holds when it reaches its generation limit: its prompt plus
/// max_tokens - 1 tokens (the last sampled token is never fed back), capped at the
/// whole cache, since the engine finishes a sequence at its context limit.
inline int blocks_at_limit(const inflight_seq_info& seq, const inflight_sched_budget& budget) {
  const long long tokens = static_cast<long long>(seq.num_prompt_tokens) + seq.max_tokens - 1;
  const long long capacity = static_cast<long long>(budget.num_total_blocks) * budget.block_size;
  const long long capped = std::max<long long>(std::min(tokens, capacity), seq.num_tokens);
  return static_cast<int>((capped + budget.block_size - 1) / budget.block_size);
}

/// Blocks not yet promised to a running sequence: the free blocks minus what every
/// running sequence still needs to reach its generation limit (may be negative).
inline int unreserved_blocks(const inflight_sched_view* view) {
  long long promised = 0;
  for (std::size_t i = 0; i < view->num_running; ++i) {
    const auto& seq = view->running[i];
    promised += std::max(0, blocks_at_limit(seq, view->budget) - seq.num_blocks_held);
  }
  return static_cast<int>(std::max<long long>(INT_MIN, view->budget.num_free_blocks - promised));
}

/// One admission of a plan: `num_tokens` of a waiting sequence.
struct admission {
  const inflight_seq_info* seq;
  int num_tokens;
};

/// Limits of whole-prompt admissions in one step.
struct whole_prompt_limits {
  int max_prompt_tokens_now = 0;   ///< prompt tokens this step may still take
  int max_prompt_tokens_ever = 0;  ///< the most a step can ever take (the step's cap)
  bool is_reserving = false;       ///< reserve blocks up to each request's generation limit
};

/// The waiting sequences to admit whole this step, in queue order (preempted ones,
/// which recompute prompt + generated tokens, come first), stopping at the first that
/// does not fit, so no later arrival overtakes it. A sequence fits when there is a seat
/// and an entry left, its whole need fits in the prompt tokens left, and its blocks are
/// free: all the blocks its need takes, and when reserving, all the blocks it can ever
/// take must not be promised to a running sequence (waived while nothing runs and
/// nothing was admitted yet, so a lone request always starts).
///
/// A need above `max_prompt_tokens_ever` can never be prefilled whole: when such a
/// sequence is at the head and nothing else is admitted, it is admitted alone with the
/// prompt tokens left (its blocks checked for the whole need) and the policy carries
/// its prefill on over the next steps. The plan is computed without writing anything,
/// so a policy can still decide not to admit it (tgi's waiting_served_ratio).
inline std::vector<admission> plan_whole_admissions(const inflight_sched_view* view,
                                                    const decision_builder& out,
                                                    const whole_prompt_limits& limits) {
  std::vector<admission> plan;
  const int block_size = view->budget.block_size;
  int tokens_left = std::min(limits.max_prompt_tokens_now, out.budget_left());
  int free_blocks = out.num_free_blocks();
  int unreserved = limits.is_reserving ? unreserved_blocks(view) : 0;
  int seats = view->budget.max_num_seqs - static_cast<int>(view->num_running);
  int entries = view->budget.max_num_seqs - out.num_scheduled();
  for (std::size_t i = 0; i < view->num_waiting; ++i) {
    const inflight_seq_info& seq = view->waiting[i];
    if (seats <= 0 || entries <= 0 || tokens_left <= 0) break;
    const int need = seq.num_tokens_needed;
    const bool is_oversized = need > limits.max_prompt_tokens_ever;
    if (is_oversized && !plan.empty()) break;
    if (!is_oversized && need > tokens_left) break;
    const int blocks = inflight_blocks_needed(&seq, need, block_size);
    if (blocks > free_blocks) break;
    const bool is_lone_start = view->num_running == 0 && plan.empty();
    const int reserved = limits.is_reserving ? blocks_at_limit(seq, view->budget) : 0;
    if (limits.is_reserving && !is_lone_start && reserved > unreserved) break;
    const int granted = std::min(need, tokens_left);
    plan.push_back({&seq, granted});
    if (is_oversized) break;  // it runs alone
    tokens_left -= granted;
    free_blocks -= blocks;
    unreserved -= reserved;
    --seats;
    --entries;
  }
  return plan;
}

/// Writes a plan into the decision. Returns the number of sequences admitted.
inline int admit(decision_builder& out, const std::vector<admission>& plan) {
  int num_admitted = 0;
  for (const auto& a : plan) num_admitted += out.add_waiting(*a.seq, a.num_tokens) > 0;
  return num_admitted;
}

/// Running sequences still prefilling (need more than one token): prompts longer than
/// a step, whose prefill goes on over several steps.
inline std::vector<const inflight_seq_info*> partial_prefills(const inflight_sched_view* view) {
  std::vector<const inflight_seq_info*> out;
  for (const auto* seq : by_arrival(view->running, view->num_running))
    if (seq->num_tokens_needed > 1) out.push_back(seq);
  return out;
}

}  // namespace inflight::policies
