#pragma once
// The block decoding of quant_matmul.cu's kernels (quant_matmul.hpp), compiled for the
// device there and for the host by tests/kernels/quant_blocks_host_test.cpp, which runs
// the GEMV's lanes on the CPU against kernels::cpu::quant_gemv_twin: the word loads,
// nibble shifts and sum indices are checked on every machine, the launch on a GPU.
// Host builds use std::fma for the device's fused multiply-adds and plain products for
// __fmul_rn (the host files are compiled without contraction: baseline x86-64 has no FMA).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dtypes/half.hpp"
#include "dtypes/weight_dtype.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define INFLIGHT_QB __host__ __device__ __forceinline__
#else
#define INFLIGHT_QB inline
#endif

namespace inflight::kernels::cuda::quant_blocks {

using wt = weight_dtype;

INFLIGHT_QB int byte_at(const std::byte* p) { return int(*reinterpret_cast<const unsigned char*>(p)); }

/// The fp16 at p (2-byte aligned) as a float (exact).
INFLIGHT_QB float half_at(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  return __half2float(*reinterpret_cast<const __half*>(p));
#else
  std::uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_float(h);
#endif
}

/// Four bytes at a 2-byte aligned address, little-endian.
INFLIGHT_QB int word_at2(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  const auto* h = reinterpret_cast<const unsigned short*>(p);
  return int(unsigned(h[0]) | (unsigned(h[1]) << 16));
#else
  std::int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

/// The float, int32 and int16 at naturally aligned addresses.
INFLIGHT_QB float f32_at(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const float*>(p);
#else
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

INFLIGHT_QB int i32_at(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const int*>(p);
#else
  std::int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

INFLIGHT_QB int i16_at(const std::byte* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const short*>(p);
#else
  std::int16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

/// Eight words (32 bytes) at a 16-byte aligned address.
INFLIGHT_QB void words8_at16(const std::byte* p, int* out) {
#if defined(__CUDA_ARCH__)
  const int4 a = reinterpret_cast<const int4*>(p)[0], b = reinterpret_cast<const int4*>(p)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
#else
  std::memcpy(out, p, 32);
#endif
}

INFLIGHT_QB int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i) c += int(static_cast<signed char>(a >> (8 * i))) * int(static_cast<signed char>(b >> (8 * i)));
  return c;
#endif
}

INFLIGHT_QB float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

INFLIGHT_QB float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

INFLIGHT_QB float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

/// Sub-block j's 6-bit scale and min of a q4_k super-block (dtypes' k_scale_min).
INFLIGHT_QB void scale_min_k4(const std::byte* packed, int j, int& sc, int& m) {
  if (j < 4) {
    sc = byte_at(packed + j) & 63;
    m = byte_at(packed + j + 4) & 63;
  } else {
    sc = (byte_at(packed + j + 4) & 0xf) | ((byte_at(packed + j - 4) >> 6) << 4);
    m = (byte_at(packed + j + 4) >> 4) | ((byte_at(packed + j) >> 6) << 4);
  }
}

/// Unit u (values 32u..32u+31) of a weight row: its 32 levels, 4 per int in value order,
/// and its scales. q4_k rows must start 16-byte aligned (their row bytes are multiples of
/// 144); the other types need 2.
template <wt W>
struct unit_of {
  int q[8];
  float d = 0.0f, dmin = 0.0f;
  int sc0 = 0, sc1 = 0;  // q4_k: sc, m; q6_k: the two sub-blocks' scales

  INFLIGHT_QB unit_of(const std::byte* row, int u) {
    if constexpr (W == wt::q8_0) {
      const std::byte* b = row + 34 * std::int64_t(u);
      d = half_at(b);
      for (int i = 0; i < 8; ++i) q[i] = word_at2(b + 2 + 4 * i);
    } else if constexpr (W == wt::q4_0) {
      const std::byte* b = row + 18 * std::int64_t(u);
      d = half_at(b);
      for (int i = 0; i < 4; ++i) {
        const int w = word_at2(b + 2 + 4 * i);
        q[i] = w & 0x0f0f0f0f;
        q[4 + i] = (w >> 4) & 0x0f0f0f0f;
      }
    } else if constexpr (W == wt::q4_k) {
      const std::byte* b = row + 144 * std::int64_t(u / 8);
      const int j = u % 8, shift = 4 * (j % 2);
      d = half_at(b);
      dmin = half_at(b + 2);
      scale_min_k4(b + 4, j, sc0, sc1);
      words8_at16(b + 16 + 32 * (j / 2), q);
      for (int i = 0; i < 8; ++i) q[i] = (q[i] >> shift) & 0x0f0f0f0f;
    } else {  // q6_k
      const std::byte* b = row + 210 * std::int64_t(u / 8);
      const int j32 = u % 8, half = j32 / 4, g = j32 % 4;
      d = half_at(b + 208);
      sc0 = static_cast<signed char>(byte_at(b + 192 + 2 * j32));
      sc1 = static_cast<signed char>(byte_at(b + 193 + 2 * j32));
      const std::byte* ql = b + 64 * half + 32 * (g % 2);
      const std::byte* qh = b + 128 + 32 * half;
      for (int i = 0; i < 8; ++i) {
        const int low = (word_at2(ql + 4 * i) >> (g < 2 ? 0 : 4)) & 0x0f0f0f0f;
        const int high = ((word_at2(qh + 4 * i) >> (2 * g)) & 0x03030303) << 4;
        q[i] = low | high;
      }
    }
  }
};

/// acc plus unit u of the weight row . unit u of one prepared token row x (64-byte
/// aligned; its scales and sums at those offsets), as quant_matmul.hpp writes it.
template <wt W>
INFLIGHT_QB float unit_product(const unit_of<W>& w, const std::byte* x, int u, std::int64_t scales, std::int64_t sums,
                               float acc) {
  int xq[8];
  words8_at16(x + 32 * std::int64_t(u), xq);
  auto scale = [&](int i) { return f32_at(x + scales + 4 * i); };
  auto sum16 = [&](int i) { return i16_at(x + sums + 2 * i); };
  if constexpr (W == wt::q6_k) {
    int dot0 = 0, dot1 = 0;
    for (int i = 0; i < 4; ++i) dot0 = dp4a(w.q[i], xq[i], dot0);
    for (int i = 4; i < 8; ++i) dot1 = dp4a(w.q[i], xq[i], dot1);
    const int isum = w.sc0 * dot0 - 32 * w.sc0 * sum16(2 * u) + w.sc1 * dot1 - 32 * w.sc1 * sum16(2 * u + 1);
    return fma_rn(float(isum), mul_rn(w.d, scale(u / 8)), acc);
  } else {
    int dot = 0;
    for (int i = 0; i < 8; ++i) dot = dp4a(w.q[i], xq[i], dot);
    if constexpr (W == wt::q4_k) {
      const float dx = scale(u / 8);
      const int msum = w.sc1 * (sum16(2 * u) + sum16(2 * u + 1));
      acc = fma_rn(float(w.sc0 * dot), mul_rn(w.d, dx), acc);
      return fma_rn(float(msum), mul_rn(-w.dmin, dx), acc);
    } else {
      if constexpr (W == wt::q4_0) {
        dot -= 8 * i32_at(x + sums + 4 * std::int64_t(u));
      }
      return fma_rn(float(dot), mul_rn(w.d, scale(u)), acc);
    }
  }
}

/// Value i of a row, with dtypes/dequantize.cpp's operations (no contraction).
INFLIGHT_QB float value_at(wt type, const std::byte* row, int i) {
  switch (type) {
    case wt::q8_0: {
      const std::byte* b = row + 34 * std::int64_t(i / 32);
      return mul_rn(half_at(b), float(static_cast<signed char>(byte_at(b + 2 + i % 32))));
    }
    case wt::q4_0: {
      const std::byte* b = row + 18 * std::int64_t(i / 32);
      const int j = i % 32, byte = byte_at(b + 2 + j % 16);
      return mul_rn(half_at(b), float((j < 16 ? byte & 0xf : byte >> 4) - 8));
    }
    case wt::q4_k: {
      const std::byte* b = row + 144 * std::int64_t(i / 256);
      const int v = i % 256;
      int sc, m;
      scale_min_k4(b + 4, v / 32, sc, m);
      const float step = mul_rn(half_at(b), float(sc)), offset = mul_rn(half_at(b + 2), float(m));
      const int byte = byte_at(b + 16 + 32 * (v / 64) + v % 32);
      return sub_rn(mul_rn(step, float((v % 64) < 32 ? byte & 0xf : byte >> 4)), offset);
    }
    default: {  // q6_k
      const std::byte* b = row + 210 * std::int64_t(i / 256);
      const int v = i % 256, half = v / 128, g = (v % 128) / 32, l = v % 32;
      const int low = byte_at(b + 64 * half + 32 * (g % 2) + l) >> (g < 2 ? 0 : 4) & 0xf;
      const int high = byte_at(b + 128 + 32 * half + l) >> (2 * g) & 3;
      const float ds = mul_rn(half_at(b + 208), float(static_cast<signed char>(byte_at(b + 192 + v / 16))));
      return mul_rn(ds, float((low | (high << 4)) - 32));
    }
  }
}

}  // namespace inflight::kernels::cuda::quant_blocks
