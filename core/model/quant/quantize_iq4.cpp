// The iq4 formats: 4-bit indices into a fixed non-linear codebook (iq4_values, from
// GGUF), so the levels are denser near zero where weights are. iq4_nl: blocks of 32 with
// an fp16 scale; iq4_xs: super-blocks of 256, eight sub-blocks of 32 with 6-bit scales
// (ls - 32) times one fp16 d. Layouts: dtypes/weight_dtype.hpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/quant/quant_search.hpp"
#include "core/model/quant/quantize.hpp"
#include "dtypes/dequantize.hpp"

namespace inflight {

using namespace quant_detail;

namespace {

/// The codebook entry nearest to v (in units of the scale).
int nearest_level(float v) {
  int best = 0;
  float best_distance = std::fabs(v - float(iq4_values[0]));
  for (int q = 1; q < 16; ++q) {
    const float distance = std::fabs(v - float(iq4_values[q]));
    if (distance < best_distance) best = q, best_distance = distance;
  }
  return best;
}

/// d and levels for x ~ d * iq4_values[q] over n values, minimizing sum w (x - d v)^2:
/// candidate scales map the largest |x| to the codebook's far end (and a few steps in),
/// each refitted by least squares on the levels it chose. Returns d (0 for all zeros).
float search_codebook(const float* x, const float* w, int n) {
  float extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  }
  if (extreme == 0.0f) return 0.0f;
  float best_d = extreme / -127.0f, best_error = INFINITY;
  for (int step = -9; step <= 9; ++step) {
    const float d = extreme / (-127.0f + 2.0f * float(step));
    double sum_xv = 0.0, sum_vv = 0.0;
    for (int i = 0; i < n; ++i) {
      const float v = float(iq4_values[nearest_level(x[i] / d)]);
      sum_xv += double(w[i]) * x[i] * v, sum_vv += double(w[i]) * v * v;
    }
    if (sum_vv <= 0.0) continue;
    const float fitted = float(sum_xv / sum_vv);
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float e = x[i] - fitted * float(iq4_values[nearest_level(x[i] / fitted)]);
      error += w[i] * e * e;
    }
    if (error < best_error) best_error = error, best_d = fitted;
  }
  return best_d;
}

/// 32 values at scale d as nibbles, value i in the low nibble of byte i, i + 16 in its high one.
void store_levels(const float* x, float d, std::byte* qs) {
  for (int i = 0; i < 16; ++i) {
    const int lo = d != 0.0f ? nearest_level(x[i] / d) : nearest_level(0.0f);
    const int hi = d != 0.0f ? nearest_level(x[i + 16] / d) : nearest_level(0.0f);
    qs[i] = std::byte(lo | (hi << 4));
  }
}

}  // namespace

void quantize_iq4_nl(const float* x, std::int64_t n, std::byte* out) {
  float w[32];
  for (std::int64_t b = 0; b < n / 32; ++b, x += 32, out += 18) {
    importance(x, 32, w);
    store_half(out, search_codebook(x, w, 32));
    store_levels(x, load_half(out), out + 2);  // the scale as stored
  }
}

void quantize_iq4_xs(const float* x, std::int64_t n, std::byte* out) {
  float w[32], s[8];
  for (std::int64_t b = 0; b < n / 256; ++b, x += 256, out += 136) {
    float extreme = 0.0f;
    for (int j = 0; j < 8; ++j) {
      importance(x + 32 * j, 32, w);
      s[j] = search_codebook(x + 32 * j, w, 32);
      if (std::fabs(s[j]) > std::fabs(extreme)) extreme = s[j];
    }
    // Sub-block scales as d * (ls - 32), ls in 0..63: the largest maps to -32.
    store_half(out, extreme / -32.0f);
    const float d = load_half(out);
    std::uint16_t high = 0;
    std::memset(out + 4, 0, 4);
    for (int j = 0; j < 8; ++j) {
      const int ls = quantize_value(s[j], d, -32, 31) + 32;
      high |= std::uint16_t((ls >> 4) << (2 * j));
      out[4 + j / 2] |= std::byte((ls & 0xf) << (4 * (j % 2)));
      store_levels(x + 32 * j, d * float(ls - 32), out + 8 + 16 * j);
    }
    std::memcpy(out + 2, &high, sizeof(high));  // little-endian, as GGUF stores it
  }
}

}  // namespace inflight
