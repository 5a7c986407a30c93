#pragma once
/// What one more row costs a step, learned from the steps themselves: a least-squares
/// line t = t0 + c R through recent (rows, seconds) pairs, older ones fading. The budget
/// rule of speculative decoding drafts by c / t0 (speculative_config::row_cost): a large
/// model on a CPU reads its weights once per step whatever R (c / t0 small: drafts pay),
/// a tiny one pays per row (c / t0 large: they never do).

#include <optional>
#include <utility>

namespace inflight {

class row_cost_fit {
 public:
  /// A step of `rows` rows took `seconds` (its backend's time; 0 = not measured, ignored).
  void add(int rows, double seconds);
  /// c / t0 once the steps seen vary enough in rows to tell; none before.
  std::optional<double> row_cost() const;
  /// t0, the seconds of a step that do not depend on its rows, once known (as row_cost).
  std::optional<double> fixed_seconds() const;

 private:
  static constexpr double decay = 0.99;  ///< each step's weight fades by this per later step
  /// The line (t0, c), when the rows varied enough.
  std::optional<std::pair<double, double>> line() const;

  double w_ = 0.0, sx_ = 0.0, sy_ = 0.0, sxx_ = 0.0, sxy_ = 0.0;
};

}  // namespace inflight
