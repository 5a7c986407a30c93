#include "dtypes/dequantize.hpp"

#include <bit>
#include <cstring>

#include "dtypes/half.hpp"

// The k-quant formats (256-value super-blocks with quantized sub-block scales), as
// ggml-common.h lays them out:
//
//   q4_k (144 bytes): half d | half dmin | scales[12] | qs[128]
//   q5_k (176 bytes): half d | half dmin | scales[12] | qh[32] | qs[128]
//   q6_k (210 bytes): ql[128] | qh[64] | int8 scales[16] | half d
//   q2_k  (84 bytes): scales[16] | qs[64] | half d | half dmin
//   q3_k (110 bytes): hmask[32] | qs[64] | scales[12] | half d
//
// q4_k / q5_k: 8 sub-blocks of 32, x = d * sc[j] * q - dmin * m[j] with 6-bit sc, m
// packed in scales[12]; the 64 values 64p..64p+63 take the low nibbles (first 32) and the
// high nibbles (next 32) of qs[32p..32p+31]; q5_k's fifth bits are bit 2p (first 32) and
// 2p+1 (next 32) of qh[0..31]. q6_k: 16 sub-blocks of 16, x = d * scales[j] * (q - 32);
// in each half of 128, value 32g + l takes the low (g < 2) or high nibble of
// ql[32 (g % 2) + l] and bits 2g, 2g+1 of qh[l].
//
// q2_k / q3_k: 16 sub-blocks of 16 whose 2-bit levels share qs: in each half of 128,
// value 32g + l takes bits 2g, 2g+1 of qs[32 half + l]. q2_k: x = d * sc[j] * q - dmin *
// m[j], scales[j] = sc[j] | m[j] << 4. q3_k: x = d * (sc[j] - 32) * (q - 4), q's third bit
// (value 4) is bit i / 32 of hmask[i % 32]; 6-bit sc[j]: the low nibble in scales[j] (j < 8)
// or in scales[j - 8]'s high nibble, the top 2 bits at bit 2 (j / 4) of scales[8 + j % 4].

namespace inflight {
namespace {

constexpr int super = 256;

/// Nibble i (0..255) of a q4_k / q5_k super-block's qs.
int nibble_at(const std::byte* qs, int i) {
  const int byte = std::to_integer<int>(qs[32 * (i / 64) + i % 32]);
  return (i % 64) < 32 ? byte & 0xf : byte >> 4;
}

void dequantize_affine(const std::byte* block, const std::byte* qh, const std::byte* qs, float* out) {
  const float d = load_half(block), dmin = load_half(block + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k_scale_min(block + 4, j, sc, m);
    const float step = d * float(sc), offset = dmin * float(m);
    for (int i = 32 * j; i < 32 * j + 32; ++i) {
      const int high = qh != nullptr && (std::to_integer<int>(qh[i % 32]) >> (i / 32) & 1) ? 16 : 0;
      out[i] = step * float(nibble_at(qs, i) + high) - offset;
    }
  }
}

/// The 2-bit level (0..3) of value i (0..255) in a q2_k / q3_k super-block's qs[64].
int k_level2(const std::byte* qs, int i) {
  const int half = i / 128, g = (i % 128) / 32, l = i % 32;
  return std::to_integer<int>(qs[32 * half + l]) >> (2 * g) & 3;
}

/// Value i's level (-4..3) of a q3_k super-block (at `block`): its 2 bits and third bit.
int q3_k_level(const std::byte* block, int i) {
  const bool is_high = (std::to_integer<int>(block[i % 32]) >> (i / 32) & 1) != 0;
  return k_level2(block + 32, i) - (is_high ? 0 : 4);
}

}  // namespace

void k_scale_min(const std::byte* packed, int j, int& sc, int& m) {
  auto q = [&](int i) { return std::to_integer<int>(packed[i]); };
  if (j < 4) {
    sc = q(j) & 63, m = q(j + 4) & 63;
  } else {
    sc = (q(j + 4) & 0xf) | ((q(j - 4) >> 6) << 4);
    m = (q(j + 4) >> 4) | ((q(j) >> 6) << 4);
  }
}

float load_half(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_float(h);
}

void dequantize_f32(const std::byte* in, std::int64_t n, float* out) {
  std::memcpy(out, in, std::size_t(n) * sizeof(float));
}

void dequantize_f16(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = load_half(in + 2 * i);
}

void dequantize_bf16(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, in + 2 * i, sizeof(h));
    out[i] = bf16_to_float(h);
  }
}

void dequantize_q8_0(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 34, out += 32) {
    const float d = load_half(in);
    for (int i = 0; i < 32; ++i) out[i] = d * float(std::int8_t(in[2 + i]));
  }
}

void dequantize_q4_0(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 18, out += 32) {
    const float d = load_half(in);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[2 + i]);
      out[i] = d * float((byte & 0xf) - 8);
      out[i + 16] = d * float((byte >> 4) - 8);
    }
  }
}

void dequantize_q5_0(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 22, out += 32) {
    const float d = load_half(in);
    std::uint32_t high;
    std::memcpy(&high, in + 2, 4);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[6 + i]);
      out[i] = d * float(((byte & 0xf) | int((high >> i) & 1) << 4) - 16);
      out[i + 16] = d * float(((byte >> 4) | int((high >> (i + 16)) & 1) << 4) - 16);
    }
  }
}

void dequantize_q4_k(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 144, out += super) dequantize_affine(in, nullptr, in + 16, out);
}

void dequantize_q5_k(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 176, out += super) dequantize_affine(in, in + 16, in + 48, out);
}

void dequantize_q6_k(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 210, out += super) {
    const std::byte *ql = in, *qh = in + 128, *scales = in + 192;
    const float d = load_half(in + 208);
    for (int i = 0; i < super; ++i) {
      const int half = i / 128, g = (i % 128) / 32, l = i % 32;
      const int low = std::to_integer<int>(ql[64 * half + 32 * (g % 2) + l]) >> (g < 2 ? 0 : 4) & 0xf;
      const int high = std::to_integer<int>(qh[32 * half + l]) >> (2 * g) & 3;
      out[i] = d * float(std::int8_t(scales[i / 16])) * float((low | (high << 4)) - 32);
    }
  }
}

void dequantize_q4_1(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 20, out += 32) {
    const float d = load_half(in), m = load_half(in + 2);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[4 + i]);
      out[i] = d * float(byte & 0xf) + m;
      out[i + 16] = d * float(byte >> 4) + m;
    }
  }
}

void dequantize_q5_1(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 24, out += 32) {
    const float d = load_half(in), m = load_half(in + 2);
    std::uint32_t high;
    std::memcpy(&high, in + 4, 4);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[8 + i]);
      out[i] = d * float((byte & 0xf) | int((high >> i) & 1) << 4) + m;
      out[i + 16] = d * float((byte >> 4) | int((high >> (i + 16)) & 1) << 4) + m;
    }
  }
}

void dequantize_iq4_nl(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 18, out += 32) {
    const float d = load_half(in);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[2 + i]);
      out[i] = d * float(iq4_values[byte & 0xf]);
      out[i + 16] = d * float(iq4_values[byte >> 4]);
    }
  }
}

int iq4_xs_scale(const std::byte* block, int j) {
  std::uint16_t high;
  std::memcpy(&high, block + 2, sizeof(high));
  const int low = std::to_integer<int>(block[4 + j / 2]) >> (4 * (j % 2)) & 0xf;
  return low | int((high >> (2 * j)) & 3u) << 4;
}

void dequantize_iq4_xs(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 136) {
    const float d = load_half(in);
    for (int j = 0; j < 8; ++j, out += 32) {
      const float dl = d * float(iq4_xs_scale(in, j) - 32);
      const std::byte* qs = in + 8 + 16 * j;
      for (int i = 0; i < 16; ++i) {
        const int byte = std::to_integer<int>(qs[i]);
        out[i] = dl * float(iq4_values[byte & 0xf]);
        out[i + 16] = dl * float(iq4_values[byte >> 4]);
      }
    }
  }
}

float e8m0_half(std::byte e) {
  const auto bits = std::to_integer<std::uint32_t>(e);
  // 2^(e - 128) has a normal fp32 exponent field of e - 1 from e = 2 on; below, the
  // subnormals 2^-128 and 2^-127 are mantissa bits 21 and 22.
  return std::bit_cast<float>(bits < 2 ? 0x00200000u << bits : (bits - 1) << 23);
}

void dequantize_mxfp4(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / 32; ++b, in += 17, out += 32) {
    const float d = e8m0_half(in[0]);
    for (int i = 0; i < 16; ++i) {
      const int byte = std::to_integer<int>(in[1 + i]);
      out[i] = d * float(mxfp4_values[byte & 0xf]);
      out[i + 16] = d * float(mxfp4_values[byte >> 4]);
    }
  }
}

int q3_k_scale(const std::byte* packed, int j) {
  const int byte = std::to_integer<int>(packed[j % 8]);
  const int low = j < 8 ? byte & 0xf : byte >> 4;
  return low | (std::to_integer<int>(packed[8 + j % 4]) >> (2 * (j / 4)) & 3) << 4;
}

void dequantize_q2_k(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 84, out += super) {
    const float d = load_half(in + 80), dmin = load_half(in + 82);
    for (int j = 0; j < 16; ++j) {
      const int scale_min = std::to_integer<int>(in[j]);
      const float step = d * float(scale_min & 0xf), offset = dmin * float(scale_min >> 4);
      for (int i = 16 * j; i < 16 * j + 16; ++i) out[i] = step * float(k_level2(in + 16, i)) - offset;
    }
  }
}

void dequantize_q3_k(const std::byte* in, std::int64_t n, float* out) {
  for (std::int64_t b = 0; b < n / super; ++b, in += 110, out += super) {
    const float d = load_half(in + 108);
    for (int j = 0; j < 16; ++j) {
      const float step = d * float(q3_k_scale(in + 96, j) - 32);
      for (int i = 16 * j; i < 16 * j + 16; ++i) out[i] = step * float(q3_k_level(in, i));
    }
  }
}

void dequantize(weight_dtype dtype, const std::byte* in, std::int64_t n, float* out) {
  switch (dtype) {
    case weight_dtype::f32: dequantize_f32(in, n, out); break;
    case weight_dtype::f16: dequantize_f16(in, n, out); break;
    case weight_dtype::bf16: dequantize_bf16(in, n, out); break;
    case weight_dtype::q8_0: dequantize_q8_0(in, n, out); break;
    case weight_dtype::q4_0: dequantize_q4_0(in, n, out); break;
    case weight_dtype::q5_0: dequantize_q5_0(in, n, out); break;
    case weight_dtype::q4_k: dequantize_q4_k(in, n, out); break;
    case weight_dtype::q5_k: dequantize_q5_k(in, n, out); break;
    case weight_dtype::q6_k: dequantize_q6_k(in, n, out); break;
    case weight_dtype::q4_1: dequantize_q4_1(in, n, out); break;
    case weight_dtype::q5_1: dequantize_q5_1(in, n, out); break;
    case weight_dtype::iq4_nl: dequantize_iq4_nl(in, n, out); break;
    case weight_dtype::iq4_xs: dequantize_iq4_xs(in, n, out); break;
    case weight_dtype::q2_k: dequantize_q2_k(in, n, out); break;
    case weight_dtype::q3_k: dequantize_q3_k(in, n, out); break;
    case weight_dtype::mxfp4: dequantize_mxfp4(in, n, out); break;
  }
}

}  // namespace inflight
