#include "core/model/rope_factors.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace inflight {

namespace {

/// Pair i's frequency over 2 pi: the reciprocal of its wavelength.
double inverse_wavelength(int pair, const model_config& c) {
  return std::pow(double(c.rope_theta), -2.0 * pair / c.head_dim) / (2.0 * std::numbers::pi);
}

/// The factor the kernels' formula (kernels/cpu/llama.cpp rope_inv_freq) gives a pair.
double factor_of(double inverse_wavelength, const rope_scaling& s) {
  const double wavelen = 1.0 / inverse_wavelength;
  const double old = s.original_max_position;
  if (wavelen < old / s.high_freq_factor) return 1.0;
  if (wavelen > old / s.low_freq_factor) return s.factor;
  const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return 1.0 / ((1.0 - smooth) / s.factor + smooth);
}

/// Where the smoothing band lies, as inverse wavelengths: below x_low the full factor,
/// above x_high none.
struct band {
  double x_low = 0;
  double x_high = 0;
};

/// The band when no pair lies inside it: between the last unscaled and the first fully
/// scaled pair (`first_full` of them).
band band_between(const std::vector<double>& x, std::size_t first_full) {
  if (first_full == 0) return {2 * x[0], 4 * x[0]};
  const double a = x[first_full - 1], b = x[first_full];
  return {b + (a - b) / 3, b + 2 * (a - b) / 3};
}

/// The band when one pair `j` lies inside it with smoothing `s`: as narrow as needed to
/// leave its neighbours outside.
band band_around(const std::vector<double>& x, std::size_t j, double s) {
  double delta = x[j] / 2;
  if (j > 0) delta = std::min(delta, 0.5 * (x[j - 1] - x[j]) / (1 - s));
  if (j + 1 < x.size()) delta = std::min(delta, 0.5 * (x[j] - x[j + 1]) / s);
  return {x[j] - s * delta, x[j] + (1 - s) * delta};
}

}  // namespace

std::vector<float> llama3_rope_factors(const model_config& c) {
  std::vector<float> factors(std::size_t(c.head_dim / 2), 1.0f);
  if (c.scaling.type != rope_scaling_type::llama3) return factors;
  for (int i = 0; i < c.head_dim / 2; ++i) factors[std::size_t(i)] = float(factor_of(inverse_wavelength(i, c), c.scaling));
  return factors;
}

namespace {

std::unexpected<error> refuse(const std::string& why) {
  return make_error(errc::unsupported, "rope_freqs.weight: " + why + " (only Llama-3 RoPE scaling is supported)");
}

/// The smoothing band that gives `factors` at inverse wavelengths `x`, `full` the largest factor.
result<band> try_fit_band(std::span<const float> factors, const std::vector<double>& x, double full) {
  constexpr double tolerance = 1e-4;
  std::vector<std::size_t> smooth;
  std::size_t num_leading_ones = 0;
  for (std::size_t i = 0; i < factors.size(); ++i) {
    const double f = factors[i];
    if (std::abs(f - 1.0) <= tolerance && num_leading_ones == i) ++num_leading_ones;
    if (std::abs(f - 1.0) > tolerance && std::abs(f - full) > tolerance * full) smooth.push_back(i);
  }
  // Smoothing s of pair i: 1 / factor = (1 - s) / full + s.
  const auto smoothing = [&](std::size_t i) { return (1.0 / factors[i] - 1.0 / full) / (1.0 - 1.0 / full); };
  if (smooth.empty()) return band_between(x, num_leading_ones);
  if (smooth.size() == 1) return band_around(x, smooth[0], smoothing(smooth[0]));
  // s falls linearly in x across the band: two of its pairs fix where it starts and ends.
  const std::size_t i = smooth.front(), j = smooth.back();
  const double slope = (smoothing(i) - smoothing(j)) / (x[i] - x[j]);
  if (!(slope > 0)) return refuse("the factors do not fall from the low to the high frequencies");
  const double x_low = x[i] - smoothing(i) / slope;
  return band{x_low, x_low + 1.0 / slope};
}

}  // namespace

result<rope_scaling> try_fit_llama3_scaling(std::span<const float> factors, const model_config& c,
                                            int original_max_position) {
  if (c.head_dim < 2 || factors.size() != std::size_t(c.head_dim / 2) || original_max_position <= 0) {
    return refuse(std::to_string(factors.size()) + " factors for " + std::to_string(c.head_dim / 2) + " RoPE pairs");
  }
  for (float f : factors) {
    if (!std::isfinite(f) || f < 1.0f - 1e-6f) return refuse("a factor of " + std::to_string(f) + " below 1");
  }
  const double full = *std::max_element(factors.begin(), factors.end());
  if (full <= 1.0 + 1e-6) return rope_scaling{};
  std::vector<double> x(factors.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = inverse_wavelength(int(i), c);
  auto b = try_fit_band(factors, x, full);
  if (!b) return std::unexpected(b.error());
  rope_scaling s;
  s.type = rope_scaling_type::llama3;
  s.factor = float(full);
  s.original_max_position = original_max_position;
  s.low_freq_factor = float(original_max_position * b->x_low);
  s.high_freq_factor = float(original_max_position * b->x_high);
  if (!(s.low_freq_factor > 0) || !(s.high_freq_factor > s.low_freq_factor)) return refuse("no smoothing band fits");
  for (std::size_t i = 0; i < factors.size(); ++i) {
    if (std::abs(factor_of(x[i], s) - factors[i]) > 1e-3 * factors[i]) {
      return refuse("factor " + std::to_string(i) + " (" + std::to_string(factors[i]) + ") does not fit");
    }
  }
  return s;
}

}  // namespace inflight
