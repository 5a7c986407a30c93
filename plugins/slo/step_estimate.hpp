#pragma once
// The slo policy's estimate of how long a step takes, from the tokens it schedules:
//
//   seconds(n) = max(floor, n x token)
//
// `floor` is a step of few tokens (a decode step: reading the weights, fixed costs),
// `token` the time each token adds once the step is compute-bound (a prefill chunk).
// Both start from the settings and, with learning on, follow the steps the policy
// observes: the time between two decisions when the engine ran without a pause.

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "inflight_policy.h"

namespace inflight::policies {

class step_estimate {
 public:
  step_estimate(double floor_s, double token_s, bool is_learning)
      : floor_s_(floor_s), token_s_(token_s), is_learning_(is_learning) {}

  double floor_s() const { return floor_s_; }
  double token_s() const { return token_s_; }
  double seconds(int num_tokens) const { return std::max(floor_s_, num_tokens * token_s_); }
  /// Most tokens a step may hold and take at most `seconds` (0 when even a small step
  /// takes longer).
  int max_tokens_within(double seconds) const {
    if (seconds < floor_s_) return 0;
    // The epsilon keeps 0.018 / 0.0001 at 180, not 179.99...
    return token_s_ > 0 ? static_cast<int>(seconds / token_s_ + 1e-9) : INT32_MAX;
  }

  /// Learns from the step that ended by `view->now`, if the engine ran it without a
  /// pause: a sequence it scheduled is still running (so the engine stepped again at
  /// once). Then records this step's decision for the next call.
  void observe(const inflight_sched_view* view, const inflight_decision* decision) {
    if (is_learning_ && last_num_tokens_ > 0 && was_busy(view)) learn(view->now - last_now_, last_num_tokens_);
    last_now_ = view->now;
    last_num_tokens_ = 0;
    last_ids_.clear();
    for (std::size_t i = 0; i < decision->num_scheduled; ++i) {
      last_num_tokens_ += decision->scheduled[i].num_tokens;
      last_ids_.insert(decision->scheduled[i].seq_id);
    }
  }

 private:
  static constexpr double weight = 0.2;  // of each new observation

  bool was_busy(const inflight_sched_view* view) const {
    for (std::size_t i = 0; i < view->num_running; ++i)
      if (last_ids_.contains(view->running[i].seq_id)) return true;
    return false;
  }

  void learn(double seconds, int num_tokens) {
    if (!(seconds > 0)) return;
    if (num_tokens * token_s_ > floor_s_) {
      token_s_ += weight * (seconds / num_tokens - token_s_);
    } else {
      floor_s_ += weight * (seconds - floor_s_);
    }
  }

  double floor_s_;
  double token_s_;
  bool is_learning_;
  double last_now_ = 0.0;
  int last_num_tokens_ = 0;
  std::unordered_set<std::uint64_t> last_ids_;
};

}  // namespace inflight::policies
