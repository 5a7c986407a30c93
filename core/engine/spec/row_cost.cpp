#include "core/engine/spec/row_cost.hpp"

#include <algorithm>

namespace inflight {

namespace {

/// Beyond this, a row costs as much as a step: no draft ever pays.
constexpr double max_row_cost = 1000.0;
/// The spread of rows (variance, rows^2) below which the slope is noise.
constexpr double min_row_variance = 0.1;

}  // namespace

void row_cost_fit::add(int rows, double seconds) {
  if (!(seconds > 0.0) || rows < 1) return;
  const double x = rows, y = seconds;
  w_ = w_ * decay + 1.0;
  sx_ = sx_ * decay + x;
  sy_ = sy_ * decay + y;
  sxx_ = sxx_ * decay + x * x;
  sxy_ = sxy_ * decay + x * y;
}

std::optional<std::pair<double, double>> row_cost_fit::line() const {
  if (w_ <= 0.0) return std::nullopt;
  const double mx = sx_ / w_, my = sy_ / w_;
  const double var = sxx_ / w_ - mx * mx;
  if (var < min_row_variance) return std::nullopt;
  const double c = std::max(0.0, (sxy_ / w_ - mx * my) / var);
  return std::pair{my - c * mx, c};
}

std::optional<double> row_cost_fit::row_cost() const {
  const auto l = line();
  if (!l) return std::nullopt;
  const auto [t0, c] = *l;
  if (t0 <= c / max_row_cost) return max_row_cost;  // (almost) all of a step is per row
  return std::min(max_row_cost, c / t0);
}

std::optional<double> row_cost_fit::fixed_seconds() const {
  const auto l = line();
  if (!l || l->first <= 0.0) return std::nullopt;
  return l->first;
}

}  // namespace inflight
