// The 2- and 3-bit k-quants: super-blocks of 256 values in 16 sub-blocks of 16, whose
// sub-block scales are themselves quantized against one fp16 scale per super-block.
// Layouts (dtypes/dequantize.cpp has the bit positions):
//
//   q2_k  (84 bytes): scales[16] (sc | m << 4, 4 bits each) | qs[64] | half d | half dmin
//                     x = d * sc[j] * q - dmin * m[j],  q in 0..3
//   q3_k (110 bytes): hmask[32] | qs[64] | scales[12] (6-bit sc) | half d
//                     x = d * (sc[j] - 32) * q,  q in -4..3
//
// With so few levels the rounding of the sub-block scales matters as much as the scales
// themselves: after each sub-block's own least-squares search, the stored scale (and
// min) is the one of the grid points next to it that gives the smallest weighted error.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/model/quant/quant_search.hpp"
#include "core/model/quant/quantize.hpp"

namespace inflight {

using namespace quant_detail;

namespace {

constexpr int super = 256;
constexpr int sub = 16;

/// Weighted squared error of x ~ step * q - offset over one sub-block, q = round((x +
/// offset) / step) clamped to [qmin, qmax]; the levels go to q.
float grid_error(const float* x, const float* w, float step, float offset, int qmin, int qmax, int* q) {
  float error = 0.0f;
  for (int i = 0; i < sub; ++i) {
    q[i] = quantize_value(x[i] + offset, step, qmin, qmax);
    const float e = x[i] - (step * float(q[i]) - offset);
    error += w[i] * e * e;
  }
  return error;
}

/// Sets the 2-bit level of value i (0..255) in a q2_k / q3_k super-block's qs[64].
void store_level2(std::byte* qs, int i, int q) {
  const int half = i / 128, g = (i % 128) / 32, l = i % 32;
  qs[32 * half + l] |= std::byte((q & 3) << (2 * g));
}

/// q2_k sub-block j: the 4-bit scale and min next to s / d and m / dmin that fit x best;
/// returns scales[j] and writes the levels into q.
int fit_q2_k_sub_block(const float* x, const float* w, float s, float m, float d, float dmin, int* q) {
  const int sc0 = quantize_value(s, d, 0, 15), m0 = quantize_value(m, dmin, 0, 15);
  int best = 0, candidate[sub];
  float best_error = INFINITY;
  for (int sc = std::max(0, sc0 - 1); sc <= std::min(15, sc0 + 1); ++sc) {
    for (int mq = std::max(0, m0 - 1); mq <= std::min(15, m0 + 1); ++mq) {
      const float error = grid_error(x, w, d * float(sc), dmin * float(mq), 0, 3, candidate);
      if (error >= best_error) continue;
      best_error = error, best = sc | mq << 4;
      std::copy(candidate, candidate + sub, q);
    }
  }
  return best;
}

/// q3_k sub-block: the 6-bit scale (as sc - 32) next to s / d that fits x best; the
/// levels go to q.
int fit_q3_k_sub_block(const float* x, const float* w, float s, float d, int* q) {
  const int sc0 = quantize_value(s, d, -32, 31);
  int best = sc0, candidate[sub];
  float best_error = INFINITY;
  for (int sc = std::max(-32, sc0 - 1); sc <= std::min(31, sc0 + 1); ++sc) {
    const float error = grid_error(x, w, d * float(sc), 0.0f, -4, 3, candidate);
    if (error >= best_error) continue;
    best_error = error, best = sc;
    std::copy(candidate, candidate + sub, q);
  }
  return best;
}

/// Sets sub-block j's 6-bit scale (0..63) in a q3_k super-block's 12 packed scale bytes.
void store_q3_k_scale(std::byte* packed, int j, int scale) {
  packed[j % 8] |= std::byte((scale & 0xf) << (j < 8 ? 0 : 4));
  packed[8 + j % 4] |= std::byte((scale >> 4) << (2 * (j / 4)));
}

void quantize_q2_k_super(const float* x, std::byte* out) {
  float w[super], s[16], m[16], max_s = 0.0f, max_m = 0.0f;
  for (int j = 0; j < 16; ++j) {
    importance(x + sub * j, sub, w + sub * j);
    float b;
    search_affine(x + sub * j, w + sub * j, sub, 3, s[j], b);
    m[j] = -b;
    max_s = std::max(max_s, s[j]), max_m = std::max(max_m, m[j]);
  }
  store_half(out + 80, max_s / 15.0f);
  store_half(out + 82, max_m / 15.0f);
  const float d = load_half(out + 80), dmin = load_half(out + 82);  // as stored
  std::memset(out, 0, 80);
  int q[sub];
  for (int j = 0; j < 16; ++j) {
    out[j] = std::byte(fit_q2_k_sub_block(x + sub * j, w + sub * j, s[j], m[j], d, dmin, q));
    for (int i = 0; i < sub; ++i) store_level2(out + 16, sub * j + i, q[i]);
  }
}

void quantize_q3_k_super(const float* x, std::byte* out) {
  float w[super], s[16], extreme = 0.0f;
  for (int j = 0; j < 16; ++j) {
    importance(x + sub * j, sub, w + sub * j);
    s[j] = search_symmetric(x + sub * j, w + sub * j, sub, -4, 3);
    if (std::fabs(s[j]) > std::fabs(extreme)) extreme = s[j];
  }
  // Sub-block scales as d * (sc - 32), sc in 0..63: the largest maps to -32.
  std::memset(out, 0, 108);
  store_half(out + 108, extreme / -32.0f);
  const float d = load_half(out + 108);
  int q[sub];
  for (int j = 0; j < 16; ++j) {
    store_q3_k_scale(out + 96, j, fit_q3_k_sub_block(x + sub * j, w + sub * j, s[j], d, q) + 32);
    for (int i = 0; i < sub; ++i) {
      const int v = sub * j + i, level = q[i] + 4;  // 0..7: the third bit and two low bits
      if (level > 3) out[v % 32] |= std::byte(1 << (v / 32));
      store_level2(out + 32, v, level);
    }
  }
}

}  // namespace

void quantize_q2_k(const float* x, std::int64_t n, std::byte* out) {
  for (std::int64_t b = 0; b < n / super; ++b, x += super, out += 84) quantize_q2_k_super(x, out);
}

void quantize_q3_k(const float* x, std::int64_t n, std::byte* out) {
  for (std::int64_t b = 0; b < n / super; ++b, x += super, out += 110) quantize_q3_k_super(x, out);
}

}  // namespace inflight
