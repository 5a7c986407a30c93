#pragma once
// Shared pieces of the built-in policies (C++ only). A third-party policy needs only
// inflight_policy.h; this header is not installed.

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "inflight_policy.h"

namespace inflight::policies {

inline inflight_policy_status fail(char* error, std::size_t capacity, const std::string& message) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", message.c_str());
  return INFLIGHT_POLICY_ERROR;
}

/// Parses a non-negative integer setting.
inline bool parse_count(const char* text, int& out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > INT_MAX) return false;
  out = static_cast<int>(value);
  return true;
}

inline bool parse_bool(const char* text, bool& out) {
  std::string_view t = text != nullptr ? text : "";
  if (t == "true" || t == "1") return out = true, true;
  if (t == "false" || t == "0") return out = false, true;
  return false;
}

/// The sequences of a queue, oldest arrival first (ties by id, for determinism).
inline std::vector<const inflight_seq_info*> by_arrival(const inflight_seq_info* seqs, std::size_t n) {
  std::vector<const inflight_seq_info*> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(&seqs[i]);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return a->arrival_time != b->arrival_time ? a->arrival_time < b->arrival_time : a->seq_id < b->seq_id;
  });
  return out;
}

/// Fills a decision while tracking what the engine will check: token budget, seats
/// (max_num_seqs), and the free blocks left for admissions.
class decision_builder {
 public:
  decision_builder(const inflight_sched_view* view, inflight_decision* decision)
      : view_(view), decision_(decision), budget_left_(view->budget.max_num_batched_tokens),
        num_free_blocks_(view->budget.num_free_blocks),
        num_running_after_(static_cast<int>(view->num_running)) {}

  int budget_left() const { return budget_left_; }
  int num_free_blocks() const { return num_free_blocks_; }
  int num_scheduled() const { return static_cast<int>(decision_->num_scheduled); }
  /// No more entries possible: budget spent or max_num_seqs entries.
  bool is_full() const { return budget_left_ <= 0 || num_scheduled() >= view_->budget.max_num_seqs; }
  bool has_seat() const { return num_running_after_ < view_->budget.max_num_seqs; }

  /// Schedules a running sequence: its need, clipped to `max_tokens` and the budget.
  /// Blocks it lacks the engine finds by preempting others. Returns the tokens given.
  int add_running(const inflight_seq_info& seq, int max_tokens = INT_MAX) {
    if (is_full()) return 0;
    int n = std::min({seq.num_tokens_needed, max_tokens, budget_left_});
    if (n <= 0) return 0;
    num_free_blocks_ -= inflight_blocks_needed(&seq, n, view_->budget.block_size);
    push(seq.seq_id, n);
    return n;
  }

  /// Admits a waiting sequence with at most `max_tokens` tokens, clipped to the budget
  /// and to the free blocks (admissions never preempt). Returns the tokens given.
  int add_waiting(const inflight_seq_info& seq, int max_tokens = INT_MAX) {
    if (is_full() || !has_seat() || num_free_blocks_ <= 0) return 0;
    int fit = inflight_tokens_fitting(&seq, num_free_blocks_, view_->budget.block_size);
    int n = std::min({seq.num_tokens_needed, max_tokens, budget_left_, fit});
    if (n <= 0) return 0;
    num_free_blocks_ -= inflight_blocks_needed(&seq, n, view_->budget.block_size);
    ++num_running_after_;
    push(seq.seq_id, n);
    return n;
  }

  /// Preempts a running sequence: its blocks and seat become free.
  void preempt(const inflight_seq_info& seq) {
    if (decision_->num_preempt >= decision_->preempt_capacity) return;
    decision_->preempt[decision_->num_preempt++] = seq.seq_id;
    num_free_blocks_ += seq.num_blocks_held;
    --num_running_after_;
  }

 private:
  void push(std::uint64_t id, int n) {
    if (decision_->num_scheduled >= decision_->scheduled_capacity) return;
    decision_->scheduled[decision_->num_scheduled++] = inflight_schedule_entry{id, n};
    budget_left_ -= n;
  }

  const inflight_sched_view* view_;
  inflight_decision* decision_;
  int budget_left_;
  int num_free_blocks_;
  int num_running_after_;
};

}  // namespace inflight::policies
