#pragma once
// The slo policy's model of how long a step takes, from what it schedules:
//
//   seconds = max(memory, compute)             (memory alone when P = 0)
//   memory  = fixed + decode x D + kv x K      (a step of decodes: weights, KV, fixed costs)
//   compute = offset + token x (P + D)         (a step of many tokens: the matrix products)
//
// P = prompt tokens of the step, D = its decodes, K = KV tokens its attention reads
// (each entry's computed tokens plus its own). On a GPU a decode step is `memory` and a
// long prefill chunk `compute`, the shorter hidden under the longer; on a CPU `compute`
// covers any step with a prompt chunk and `memory` a step of decodes, whose time grows
// with their number. A step of decodes alone is `memory`, the fit of such steps: on a
// CPU `compute`'s offset holds the decodes beside its prompts and would overstate it.
//
// Both parts start from the settings (fixed = step_ms, token = token_ms, decode =
// decode_ms, the others 0; with decode_ms = 0, max(step, n x token) for a step with
// prompt tokens and `step` for one of decodes) and, with learning on, follow the steps
// the policy observes (the time between two decisions when the engine ran without a
// pause): `memory` is fitted to the steps without prompt tokens alone, `compute` to the
// steps with prompt tokens that took longer than 1.1x their decodes would have. A step
// whose prompt took less teaches neither: fed to `memory`, each such step pulled it up
// by the prompt's small cost, and a prediction a few percent high held admissions back
// until the queue missed its TTFT. Each fit is least squares over its last 256 steps,
// pulled towards the settings where the steps do not tell the terms apart, each
// coefficient >= 0.

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "inflight_policy.h"

namespace inflight::policies {

/// What a step holds, in the model's terms.
struct step_shape {
  double prompt_tokens = 0;
  double decodes = 0;
  double kv_tokens = 0;

  step_shape& operator+=(const step_shape& o) {
    prompt_tokens += o.prompt_tokens;
    decodes += o.decodes;
    kv_tokens += o.kv_tokens;
    return *this;
  }
  friend step_shape operator+(step_shape a, const step_shape& b) { return a += b; }
};

/// One decode over `context` tokens.
inline step_shape decode_shape(double context) { return {0.0, 1.0, context}; }

/// `n` tokens of `seq` in a step: a decode when it has generated and needs one.
inline step_shape entry_shape(const inflight_seq_info& seq, int n) {
  const double kv = double(seq.num_computed_tokens) + n;
  if (seq.num_tokens_needed == 1 && seq.first_token_time >= 0) return decode_shape(kv);
  return {double(n), 0.0, kv};
}

/// y ~ theta . x by least squares over the last `window` samples, with a ridge pulling
/// theta towards `prior` (worth one sample per coefficient), theta >= 0. Features and
/// y should be of similar sizes (the callers scale them).
template <std::size_t N>
class windowed_fit {
 public:
  using vec = std::array<double, N>;
  explicit windowed_fit(const vec& prior) : prior_(prior), theta_(prior) {}

  const vec& theta() const { return theta_; }
  double predict(const vec& x) const {
    double y = 0;
    for (std::size_t i = 0; i < N; ++i) y += theta_[i] * x[i];
    return y;
  }

  void add(const vec& x, double y) {
    if (samples_.size() == window) {
      accumulate(samples_[next_].first, samples_[next_].second, -1.0);
      samples_[next_] = {x, y};
    } else {
      samples_.push_back({x, y});
    }
    accumulate(x, y, 1.0);
    next_ = (next_ + 1) % window;
    solve();
  }

 private:
  static constexpr std::size_t window = 256;
  static constexpr double prior_weight = 1.0;

  void accumulate(const vec& x, double y, double sign) {
    for (std::size_t i = 0; i < N; ++i) {
      xty_[i] += sign * x[i] * y;
      for (std::size_t j = 0; j < N; ++j) xtx_[i][j] += sign * x[i] * x[j];
    }
  }

  /// (XtX + w I) theta = Xty + w prior by Gaussian elimination: the matrix is
  /// symmetric positive definite, no pivoting needed.
  void solve() {
    std::array<std::array<double, N + 1>, N> m{};
    for (std::size_t i = 0; i < N; ++i) {
      for (std::size_t j = 0; j < N; ++j) m[i][j] = xtx_[i][j] + (i == j ? prior_weight : 0.0);
      m[i][N] = xty_[i] + prior_weight * prior_[i];
    }
    for (std::size_t k = 0; k < N; ++k)
      for (std::size_t i = k + 1; i < N; ++i) {
        const double f = m[i][k] / m[k][k];
        for (std::size_t j = k; j <= N; ++j) m[i][j] -= f * m[k][j];
      }
    for (std::size_t k = N; k-- > 0;) {
      double v = m[k][N];
      for (std::size_t j = k + 1; j < N; ++j) v -= m[k][j] * theta_[j];
      theta_[k] = v / m[k][k];
    }
    for (double& t : theta_) t = std::max(0.0, t);
  }

  vec prior_;
  vec theta_;
  std::vector<std::pair<vec, double>> samples_;
  std::size_t next_ = 0;
  std::array<vec, N> xtx_{};
  vec xty_{};
};

class step_estimate {
 public:
  step_estimate(double fixed_s, double token_s, double decode_s, bool is_learning)
      : memory_({fixed_s * 1e3, decode_s * 1e3 * decode_unit, 0.0}), compute_({0.0, token_s * 1e3 * token_unit}),
        is_learning_(is_learning) {}

  double offset_s() const { return compute_.theta()[0] / 1e3; }
  double token_s() const { return compute_.theta()[1] / token_unit / 1e3; }

  double memory_seconds(const step_shape& s) const { return memory_.predict(memory_x(s)) / 1e3; }
  double compute_seconds(const step_shape& s) const { return compute_.predict(compute_x(s)) / 1e3; }
  /// A step without prompt tokens is what `memory` was fitted to, alone: `compute`'s
  /// offset holds what its steps' decodes took too, and would overstate it.
  double seconds(const step_shape& s) const {
    return s.prompt_tokens > 0 ? std::max(memory_seconds(s), compute_seconds(s)) : memory_seconds(s);
  }

  /// Most prompt tokens of `seq` a step already holding `base` may add and take at
  /// most `limit` seconds (0 when none fit; INT_MAX when tokens cost nothing).
  int prompt_tokens_within(const step_shape& base, const inflight_seq_info& seq, double limit) const {
    const step_shape with_seq = base + step_shape{0.0, 0.0, double(seq.num_computed_tokens)};
    if (memory_seconds(with_seq) > limit) return 0;
    if (!(token_s() > 0)) return INT_MAX;
    // The epsilon keeps 0.018 / 0.0001 at 180, not 179.99...
    const double total = (limit - offset_s()) / token_s() + 1e-9;
    return static_cast<int>(std::clamp(total - base.prompt_tokens - base.decodes, 0.0, double(INT_MAX)));
  }

  /// Learns from the step that ended by `view->now`, if the engine ran it without a
  /// pause: a sequence it scheduled is still running (so the engine stepped again at
  /// once). Then records this step's decision for the next call.
  void observe(const inflight_sched_view* view, const inflight_decision* decision) {
    if (is_learning_ && !last_ids_.empty() && was_busy(view)) learn(view->now - last_now_, last_);
    last_now_ = view->now;
    last_ = {};
    last_ids_.clear();
    std::unordered_map<std::uint64_t, int> granted;  // seq id -> tokens this step
    for (std::size_t i = 0; i < decision->num_scheduled; ++i) {
      granted[decision->scheduled[i].seq_id] += decision->scheduled[i].num_tokens;
      last_ids_.insert(decision->scheduled[i].seq_id);
    }
    const auto add = [&](const inflight_seq_info* seqs, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        if (const auto it = granted.find(seqs[i].seq_id); it != granted.end()) last_ += entry_shape(seqs[i], it->second);
    };
    add(view->running, view->num_running);
    add(view->waiting, view->num_waiting);
  }

 private:
  // Scaled so that every feature and the time (in ms) are of similar sizes: prompt
  // tokens in hundreds, decodes in tens, KV tokens in ten thousands.
  static constexpr double token_unit = 100.0, decode_unit = 10.0, kv_unit = 1e4;
  static constexpr double compute_showing = 1.1;  // a step this much over its memory part

  static std::array<double, 3> memory_x(const step_shape& s) {
    return {1.0, s.decodes / decode_unit, s.kv_tokens / kv_unit};
  }
  static std::array<double, 2> compute_x(const step_shape& s) {
    return {1.0, (s.prompt_tokens + s.decodes) / token_unit};
  }

  bool was_busy(const inflight_sched_view* view) const {
    for (std::size_t i = 0; i < view->num_running; ++i)
      if (last_ids_.contains(view->running[i].seq_id)) return true;
    return false;
  }

  void learn(double seconds, const step_shape& s) {
    if (!(seconds > 0)) return;
    const double ms = seconds * 1e3;
    if (s.prompt_tokens == 0)
      memory_.add(memory_x(s), ms);
    else if (ms > compute_showing * memory_.predict(memory_x(s)))
      compute_.add(compute_x(s), ms);
  }

  windowed_fit<3> memory_;
  windowed_fit<2> compute_;
  bool is_learning_;
  double last_now_ = 0.0;
  step_shape last_;
  std::unordered_set<std::uint64_t> last_ids_;
};

}  // namespace inflight::policies
