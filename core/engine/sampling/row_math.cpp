// Without trapping-math the compiler may turn the selects of the row loops into vector
// blends; nothing here reads FP exception flags.
#pragma GCC optimize("no-trapping-math")

#include "core/engine/sampling/row_math.hpp"

#include <limits>

// The hot loops get an AVX2 clone, chosen at load time where the CPU has it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define INFLIGHT_ROW_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define INFLIGHT_ROW_CLONES
#endif

namespace inflight::row_math {
namespace {
// Independent lanes: one running max or sum is a dependency chain that does not
// vectorise without reassociation.
constexpr std::size_t lanes = 8;
// Float partial sums stay exact enough over this many entries; blocks add up in double.
constexpr std::size_t block = 1024;
}  // namespace

INFLIGHT_ROW_CLONES float max_of(std::span<const float> row) {
  float acc[lanes];
  std::fill(acc, acc + lanes, -std::numeric_limits<float>::infinity());
  std::size_t i = 0;
  for (; i + lanes <= row.size(); i += lanes)
    for (std::size_t j = 0; j < lanes; ++j) acc[j] = row[i + j] > acc[j] ? row[i + j] : acc[j];
  float best = acc[0];
  for (float a : acc) best = a > best ? a : best;
  for (; i < row.size(); ++i) best = row[i] > best ? row[i] : best;
  return best;
}

INFLIGHT_ROW_CLONES double sum_of(std::span<const float> row) {
  double total = 0.0;
  std::size_t i = 0;
  while (i < row.size()) {
    const std::size_t end = std::min(row.size(), i + block);
    float acc[lanes] = {};
    for (; i + lanes <= end; i += lanes)
      for (std::size_t j = 0; j < lanes; ++j) acc[j] += row[i + j];
    for (; i < end; ++i) acc[0] += row[i];
    for (float a : acc) total += a;
  }
  return total;
}

INFLIGHT_ROW_CLONES double exp_shifted(std::span<const float> row, float shift, float scale,
                                       std::span<float> out) {
  double total = 0.0;
  std::size_t i = 0;
  while (i < row.size()) {
    const std::size_t end = std::min(row.size(), i + block);
    float acc[lanes] = {};
    for (; i + lanes <= end; i += lanes)
      for (std::size_t j = 0; j < lanes; ++j) {
        const float e = fast_exp((row[i + j] - shift) * scale);
        out[i + j] = e;
        acc[j] += e;
      }
    for (; i < end; ++i) {
      out[i] = fast_exp((row[i] - shift) * scale);
      acc[0] += out[i];
    }
    for (float a : acc) total += a;
  }
  return total;
}

INFLIGHT_ROW_CLONES double drop_below(std::span<float> probs, float threshold) {
  for (float& p : probs) p = p < threshold ? 0.0f : p;
  return sum_of(probs);
}

void block_max(std::span<const float> row, std::size_t block_size, std::span<float> out) {
  for (std::size_t b = 0; b * block_size < row.size(); ++b)
    out[b] = max_of(row.subspan(b * block_size, std::min(block_size, row.size() - b * block_size)));
}

INFLIGHT_ROW_CLONES void prob_bins(std::span<const float> probs, std::span<std::uint16_t> out) {
  for (std::size_t i = 0; i < probs.size(); ++i) out[i] = static_cast<std::uint16_t>(prob_bin(probs[i]));
}

std::size_t find_cumulative(std::span<const float> probs, double target) {
  // Block sums skip ahead so that the sequential scan touches one block only.
  constexpr std::size_t skip = 512;
  double cum = 0.0;
  std::size_t start = 0;
  while (start < probs.size()) {
    const std::size_t len = std::min(skip, probs.size() - start);
    const double block_sum = sum_of(probs.subspan(start, len));
    if (cum + block_sum > target) break;
    cum += block_sum;
    start += len;
  }
  for (std::size_t i = start; i < probs.size(); ++i) {
    cum += probs[i];
    if (probs[i] > 0.0f && cum > target) return i;
  }
  for (std::size_t i = probs.size(); i-- > 0;)
    if (probs[i] > 0.0f) return i;
  return 0;
}

}  // namespace inflight::row_math
