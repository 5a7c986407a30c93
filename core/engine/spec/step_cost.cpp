#include "core/engine/spec/step_cost.hpp"

#include <algorithm>
#include <vector>

namespace inflight {

namespace {

/// The spread of a kind's rows (variance, rows^2) below which its slope is noise.
constexpr double min_variance = 0.1;
/// A pivot below this share of its column's variance: the kind varies with the others only.
constexpr double min_apart = 0.01;

/// Solves a * s = b in place (Gaussian elimination, the order given); false when a pivot
/// is too small against `scale` (the diagonal before elimination).
bool solve(std::vector<std::vector<double>>& a, std::vector<double>& b, std::vector<double>& s) {
  const std::size_t n = b.size();
  std::vector<double> scale(n);
  for (std::size_t i = 0; i < n; ++i) scale[i] = a[i][i];
  for (std::size_t i = 0; i < n; ++i) {
    if (!(a[i][i] > min_apart * scale[i])) return false;
    for (std::size_t r = i + 1; r < n; ++r) {
      const double f = a[r][i] / a[i][i];
      for (std::size_t c = i; c < n; ++c) a[r][c] -= f * a[i][c];
      b[r] -= f * b[i];
    }
  }
  s.assign(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double v = b[i];
    for (std::size_t c = i + 1; c < n; ++c) v -= a[i][c] * s[c];
    s[i] = v / a[i][i];
  }
  return true;
}

}  // namespace

void step_cost_fit::add(int prompt_rows, int decode_rows, int draft_rows, double seconds) {
  if (!(seconds > 0.0) || prompt_rows + decode_rows + draft_rows < 1) return;
  const std::array<double, num_kinds> x = {double(std::max(0, prompt_rows)), double(std::max(0, decode_rows)),
                                           double(std::max(0, draft_rows))};
  w_ = w_ * decay + 1.0;
  t_ = t_ * decay + seconds;
  for (int i = 0; i < num_kinds; ++i) {
    x_[i] = x_[i] * decay + x[i];
    xt_[i] = xt_[i] * decay + x[i] * seconds;
    for (int j = 0; j < num_kinds; ++j) xx_[i][j] = xx_[i][j] * decay + x[i] * x[j];
  }
  refit();
}

void step_cost_fit::refit() {
  std::array<double, num_kinds> mean{};
  for (int i = 0; i < num_kinds; ++i) mean[i] = x_[i] / w_;
  const double mt = t_ / w_;
  const auto cov = [&](int i, int j) { return xx_[i][j] / w_ - mean[i] * mean[j]; };
  const auto cov_t = [&](int i) { return xt_[i] / w_ - mean[i] * mt; };
  // The kinds that vary, most varied first; the others keep their last slope (or none).
  std::vector<int> free;
  for (int i = 0; i < num_kinds; ++i)
    if (cov(i, i) >= min_variance) free.push_back(i);
  std::sort(free.begin(), free.end(), [&](int a, int b) { return cov(a, a) > cov(b, b); });
  std::array<std::optional<double>, num_kinds> slope = slope_;
  while (!free.empty()) {
    // The fixed kinds' part of t comes off before the free ones are fitted.
    std::vector<int> fixed;
    for (int i = 0; i < num_kinds; ++i)
      if (std::find(free.begin(), free.end(), i) == free.end() && slope[i]) fixed.push_back(i);
    const std::size_t n = free.size();
    std::vector<std::vector<double>> a(n, std::vector<double>(n));
    std::vector<double> b(n), s;
    for (std::size_t r = 0; r < n; ++r) {
      b[r] = cov_t(free[r]);
      for (int f : fixed) b[r] -= *slope[f] * cov(free[r], f);
      for (std::size_t c = 0; c < n; ++c) a[r][c] = cov(free[r], free[c]);
    }
    if (solve(a, b, s) && std::all_of(s.begin(), s.end(), [](double v) { return v >= 0.0; })) {
      for (std::size_t r = 0; r < n; ++r) slope[free[r]] = s[r];
      break;
    }
    free.pop_back();  // the least varied kind varies only with the others, or its slope is noise
  }
  slope_ = slope;
  // Nothing is known of a sampled row until decodes or drafts have varied. While the
  // decodes have not (one stream), their part of the step stays in t0.
  if (!slope_[1] && !slope_[2]) return;
  step_cost c;
  c.prompt_row_seconds = slope_[0].value_or(0.0);
  c.decode_row_seconds = slope_[1].value_or(0.0);
  c.draft_row_seconds = slope_[2].value_or(c.decode_row_seconds);
  c.fixed_seconds = std::max(0.0, mt - c.prompt_row_seconds * mean[0] - c.decode_row_seconds * mean[1] -
                                      c.draft_row_seconds * mean[2]);
  cost_ = c;
}

}  // namespace inflight
