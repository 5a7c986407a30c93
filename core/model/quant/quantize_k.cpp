// The k-quant formats (256-value super-blocks with quantized sub-block scales), as
// ggml-common.h lays them out:
//
//   q4_k (144 bytes): half d | half dmin | scales[12] | qs[128]
//   q5_k (176 bytes): half d | half dmin | scales[12] | qh[32] | qs[128]
//   q6_k (210 bytes): ql[128] | qh[64] | int8 scales[16] | half d
//
// q4_k / q5_k: 8 sub-blocks of 32, x = d * sc[j] * q - dmin * m[j] with 6-bit sc, m
// packed in scales[12]; the 64 values 64p..64p+63 take the low nibbles (first 32) and the
// high nibbles (next 32) of qs[32p..32p+31]; q5_k's fifth bits are bit 2p (first 32) and
// 2p+1 (next 32) of qh[0..31]. q6_k: 16 sub-blocks of 16, x = d * scales[j] * (q - 32);
// in each half of 128, value 32g + l takes the low (g < 2) or high nibble of
// ql[32 (g % 2) + l] and bits 2g, 2g+1 of qh[l].
#include <algorithm>
#include <cmath>

#include "core/model/quant/quant_search.hpp"
#include "core/model/quant/quantize.hpp"
#include "dtypes/dequantize.hpp"

namespace inflight {

using namespace quant_detail;

namespace {

constexpr int super = 256;



void pack_scale_min(const int* sc, const int* m, std::byte* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = std::byte((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    packed[j + 4] = std::byte((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    packed[j + 8] = std::byte((sc[j + 4] & 0xf) | ((m[j + 4] & 0xf) << 4));
  }
}

/// q4_k / q5_k: the quantized levels (0..qmax) of one super-block, with its scales
/// written at out (d, dmin, scales[12]).
void quantize_affine_super(const float* x, int qmax, std::byte* out, int* levels) {
  float w[32], s[8], b[8], max_s = 0.0f, max_m = 0.0f;
  for (int j = 0; j < 8; ++j) {
    importance(x + 32 * j, 32, w);
    search_affine(x + 32 * j, w, 32, qmax, s[j], b[j]);
    max_s = std::max(max_s, s[j]), max_m = std::max(max_m, -b[j]);
  }
  store_half(out, max_s / 63.0f);
  store_half(out + 2, max_m / 63.0f);
  const float d = load_half(out), dmin = load_half(out + 2);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = quantize_value(s[j], d, 0, 63), m[j] = quantize_value(-b[j], dmin, 0, 63);
  }
  pack_scale_min(sc, m, out + 4);
  for (int j = 0; j < 8; ++j) {
    const float step = d * float(sc[j]), offset = dmin * float(m[j]);
    for (int i = 0; i < 32; ++i) levels[32 * j + i] = quantize_value(x[32 * j + i] + offset, step, 0, qmax);
  }
}





}  // namespace

void quantize_q4_k(const float* x, std::int64_t n, std::byte* out) {
  int levels[super];
  for (std::int64_t b = 0; b < n / super; ++b, x += super, out += 144) {
    quantize_affine_super(x, 15, out, levels);
    std::byte* qs = out + 16;
    for (int i = 0; i < 128; ++i) {
      const int p = i / 32, l = i % 32;
      qs[i] = std::byte(levels[64 * p + l] | (levels[64 * p + 32 + l] << 4));
    }
  }
}

void quantize_q5_k(const float* x, std::int64_t n, std::byte* out) {
  int levels[super];
  for (std::int64_t b = 0; b < n / super; ++b, x += super, out += 176) {
    quantize_affine_super(x, 31, out, levels);
    std::byte *qh = out + 16, *qs = out + 48;
    for (int l = 0; l < 32; ++l) {
      int bits = 0;
      for (int j = 0; j < 8; ++j) bits |= (levels[32 * j + l] >> 4) << j;
      qh[l] = std::byte(bits);
    }
    for (int i = 0; i < 128; ++i) {
      const int p = i / 32, l = i % 32;
      qs[i] = std::byte((levels[64 * p + l] & 0xf) | ((levels[64 * p + 32 + l] & 0xf) << 4));
    }
  }
}





void quantize_q6_k(const float* x, std::int64_t n, std::byte* out) {
  float w[16], s[16];
  for (std::int64_t b = 0; b < n / super; ++b, x += super, out += 210) {
    float extreme = 0.0f;
    for (int j = 0; j < 16; ++j) {
      importance(x + 16 * j, 16, w);
      s[j] = search_symmetric(x + 16 * j, w, 16, -32, 31);
      if (std::fabs(s[j]) > std::fabs(extreme)) extreme = s[j];
    }
    std::byte *ql = out, *qh = out + 128, *scales = out + 192;
    store_half(out + 208, extreme / -128.0f);
    const float d = load_half(out + 208);
    std::fill(out, out + 192, std::byte{0});
    for (int j = 0; j < 16; ++j) {
      const int sc = quantize_value(s[j], d, -128, 127);
      scales[j] = std::byte(std::int8_t(sc));
      for (int i = 16 * j; i < 16 * j + 16; ++i) {
        const int q = quantize_value(x[i], d * float(sc), -32, 31) + 32;
        const int half = i / 128, g = (i % 128) / 32, l = i % 32;
        ql[64 * half + 32 * (g % 2) + l] |= std::byte((q & 0xf) << (g < 2 ? 0 : 4));
        qh[32 * half + l] |= std::byte((q >> 4) << (2 * g));
      }
    }
  }
}



}  // namespace inflight
