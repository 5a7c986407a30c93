#pragma once
/// Loops over one logits row, written so that the compiler vectorises them: no libm
/// calls, explicit independent accumulators, selects instead of branches. row_math.cpp
/// is built without FP-trap semantics (which otherwise block if-conversion) and, on
/// x86-64, with an AVX2 clone picked at load time. Used by sampling, where a 128k-entry
/// row is scanned several times per token.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace inflight::row_math {

/// e^x with relative error below 3e-7 for x in [-87, 88]; 0 below -87 (including -inf),
/// so masked logits get probability 0. Branch-free so that loops over it vectorise.
inline float fast_exp(float x) {
  const float xc = x < -87.0f ? -87.0f : x;
  // x = n*ln2 + r with |r| <= ln2/2; the magic constant rounds to nearest.
  const float n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  const float keep = x < -87.0f ? 0.0f : 1.0f;  // a select, not a branch around the multiply
  return p * two_n * keep;
}

/// Largest value of a non-empty row (NaNs are not expected).
float max_of(std::span<const float> row);

/// Sum of a row: float lanes within blocks of 1024 (fast), double across blocks (exact
/// enough for a 128k-entry softmax denominator).
double sum_of(std::span<const float> row);

/// out[i] = e^((row[i] - shift) * scale); returns the sum of out. `out` is at least as
/// long as `row`.
double exp_shifted(std::span<const float> row, float shift, float scale, std::span<float> out);

/// Sets the entries below `threshold` to 0; returns the sum of what is left.
double drop_below(std::span<float> probs, float threshold);

/// out[b] = the largest of row[b * block, (b + 1) * block): lets a scan for the few
/// largest entries skip whole blocks. `out` holds at least ceil(size / block) entries.
void block_max(std::span<const float> row, std::size_t block, std::span<float> out);

/// Index of the first entry where the running sum of `probs` exceeds `target`; the last
/// positive entry when rounding keeps the sum from getting there.
std::size_t find_cumulative(std::span<const float> probs, double target);

/// Probability bins for the nucleus search: 64 per octave from 1 down to 2^-32, the last
/// bin takes everything smaller. Bin order follows the order of the values because the
/// bits of a non-negative float grow with it.
inline constexpr std::uint32_t prob_bin_shift = 17;
inline constexpr std::size_t num_prob_bins = 32u << (23 - prob_bin_shift);

inline std::uint32_t prob_bin(float prob) {
  constexpr std::uint32_t one_bits = 0x3f800000u;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(prob);
  const std::uint32_t below_one = one_bits - (bits < one_bits ? bits : one_bits);
  const std::uint32_t bin = below_one >> prob_bin_shift;
  return bin < num_prob_bins ? bin : static_cast<std::uint32_t>(num_prob_bins - 1);
}

/// out[i] = prob_bin(probs[i]).
void prob_bins(std::span<const float> probs, std::span<std::uint16_t> out);

}  // namespace inflight::row_math
