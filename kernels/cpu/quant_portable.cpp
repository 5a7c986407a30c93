// Portable kernels of the input formats, the float weight types and the 32-value block
// types. A product of row r and token t over 32-value blocks b is
//
//   acc = 0;  for each b in order: acc += float(isum_b) * (dw_b * dx_b);  y = acc (+ y)
//
// with isum_b the exact integer dot product of the block's quantized values (q4_0's
// nibbles minus 8), dw_b the weight block's scale and dx_b the input block's.
#include "kernels/cpu/quant_portable.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace inflight::kernels::cpu {

namespace {

float load_bf16(const std::byte* p) {
  std::uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return bf16_to_float(h);
}

/// One block of `count` inputs as int8 q ~ x / d: d = max|x| / 127, q = x * (1 / d)
/// rounded to nearest even (the vector tables compute the same bits). Returns d.
float quantize_block(const float* x, int count, std::int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < count; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < count; ++i) q[i] = std::int8_t(std::nearbyint(x[i] * id));
  return d;
}

void prepare_q8(const prepare_args& a, int block, bool is_k) {
  const std::int64_t scales = prepared_scales_offset(a.k), sums = prepared_sums_offset(is_k ? input_format::q8_k : input_format::q8_0, a.k);
  for (int t = 0; t < a.n; ++t) {
    const float* x = a.x + t * a.ldx;
    std::byte* row = a.out + t * a.ld_out;
    auto* q = reinterpret_cast<std::int8_t*>(row);
    for (std::int64_t c = a.col_begin; c < a.col_end; c += block) {
      const float d = quantize_block(x + c, block, q + c);
      std::memcpy(row + scales + c / block * 4, &d, sizeof(d));
      for (int s = 0; s < block; s += (is_k ? 16 : 32)) {
        int sum = 0;
        for (int i = 0; i < (is_k ? 16 : 32); ++i) sum += q[c + s + i];
        if (is_k) {
          const auto sum16 = std::int16_t(sum);
          std::memcpy(row + sums + (c + s) / 16 * 2, &sum16, sizeof(sum16));
        } else {
          std::memcpy(row + sums + (c + s) / 32 * 4, &sum, sizeof(sum));
        }
      }
    }
  }
}

void prepare_q8_0(const prepare_args& a) { prepare_q8(a, 32, false); }
void prepare_q8_k(const prepare_args& a) { prepare_q8(a, 256, true); }

void prepare_bf16(const prepare_args& a) {
  for (int t = 0; t < a.n; ++t) {
    for (std::int64_t c = a.col_begin; c < a.col_end; ++c) {
      const std::uint16_t h = float_to_bf16(a.x[t * a.ldx + c]);
      std::memcpy(a.out + t * a.ld_out + 2 * c, &h, sizeof(h));
    }
  }
}

/// Calls f(row, token) -> float for the slice, storing (or adding) its result.
template <class F>
void for_outputs(const typed_gemm_args& a, int row_begin, int row_end, F&& f) {
  for (int t = 0; t < a.n; ++t) {
    float* y = a.y + t * a.ldy;
    for (int o = row_begin; o < row_end; ++o) {
      const float v = f(a.w.data + o * a.w.row_bytes, a.x + t * a.ldx);
      y[o] = a.accumulate ? y[o] + v : v;
    }
  }
}

/// A dot product with 8 partial sums, as the f32 kernels form theirs.
template <class W, class X>
float dot8(W w, X x, int k) {
  float s[8] = {};
  for (int i = 0; i < k; ++i) s[i % 8] += w(i) * x(i);
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

void gemm_f16(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, [&](const std::byte* w, const std::byte* x) {
    const auto* xf = reinterpret_cast<const float*>(x);
    return dot8([&](int i) { return load_half(w + 2 * i); }, [&](int i) { return xf[i]; }, a.k);
  });
}

void gemm_bf16(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, [&](const std::byte* w, const std::byte* x) {
    return dot8([&](int i) { return load_bf16(w + 2 * i); }, [&](int i) { return load_bf16(x + 2 * i); }, a.k);
  });
}

/// The 32-value block products: `value(block, i)` is the weight's quantized value i,
/// `scale(block)` its scale (an fp16 at the block's start but for mxfp4's exponent byte).
template <int block_bytes, class Value, class Scale = float (*)(const std::byte*)>
float dot_blocks32(const std::byte* w, const std::byte* x, int k, Value value, Scale scale = load_half) {
  const auto* xq = reinterpret_cast<const std::int8_t*>(x);
  const std::byte* dx = x + prepared_scales_offset(k);
  float acc = 0.0f;
  for (int b = 0; b < k / 32; ++b) {
    const std::byte* block = w + b * block_bytes;
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += value(block, i) * xq[32 * b + i];
    float d;
    std::memcpy(&d, dx + 4 * b, sizeof(d));
    acc += float(isum) * (scale(block) * d);
  }
  return acc;
}

int q8_0_value(const std::byte* block, int i) { return std::int8_t(block[2 + i]); }

int q4_0_value(const std::byte* block, int i) {
  const int byte = std::to_integer<int>(block[2 + i % 16]);
  return (i < 16 ? byte & 0xf : byte >> 4) - 8;
}

/// Value i of a q5_0 block: its nibble (as q4_0's, 4 bytes later) and its fifth bit.
int q5_0_value(const std::byte* block, int i) {
  std::uint32_t high;
  std::memcpy(&high, block + 2, sizeof(high));
  const int byte = std::to_integer<int>(block[6 + i % 16]);
  return ((i < 16 ? byte & 0xf : byte >> 4) | int((high >> i) & 1u) << 4) - 16;
}

/// The 32-value affine block products (x = d * q + m): the exact integer dot products
/// isum_b, and the input block's sum of q (from the prepared row), in one chain over the
/// blocks: acc += float(isum_b) * (d_b * dx_b); acc += float(qsum_b) * (m_b * dx_b).
template <int block_bytes, class Value>
float dot_affine32(const std::byte* w, const std::byte* x, int k, Value value) {
  const auto* xq = reinterpret_cast<const std::int8_t*>(x);
  const std::byte* dx = x + prepared_scales_offset(k);
  const std::byte* sums = x + prepared_sums_offset(input_format::q8_0, k);
  float acc = 0.0f;
  for (int b = 0; b < k / 32; ++b) {
    const std::byte* block = w + b * block_bytes;
    int isum = 0;
    for (int i = 0; i < 32; ++i) isum += value(block, i) * xq[32 * b + i];
    float d;
    std::int32_t qsum;
    std::memcpy(&d, dx + 4 * b, sizeof(d));
    std::memcpy(&qsum, sums + 4 * b, sizeof(qsum));
    acc += float(isum) * (load_half(block) * d);
    acc += float(qsum) * (load_half(block + 2) * d);
  }
  return acc;
}

/// Value i (0..15) of a q4_1 block: q4_0's nibble, 2 bytes later, unsigned.
int q4_1_value(const std::byte* block, int i) {
  const int byte = std::to_integer<int>(block[4 + i % 16]);
  return i < 16 ? byte & 0xf : byte >> 4;
}

/// Value i (0..31) of a q5_1 block: q5_0's nibble and fifth bit, 2 bytes later, unsigned.
int q5_1_value(const std::byte* block, int i) {
  std::uint32_t high;
  std::memcpy(&high, block + 4, sizeof(high));
  const int byte = std::to_integer<int>(block[8 + i % 16]);
  return (i < 16 ? byte & 0xf : byte >> 4) | int((high >> i) & 1u) << 4;
}

/// Value i of an iq4_nl block: the codebook entry its nibble (as q4_0's) names.
int iq4_nl_value(const std::byte* block, int i) {
  const int byte = std::to_integer<int>(block[2 + i % 16]);
  return iq4_values[i < 16 ? byte & 0xf : byte >> 4];
}

void gemm_iq4_nl(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_blocks32<18>(w, x, a.k, iq4_nl_value); });
}

/// Value i of an mxfp4 block: the doubled FP4 level its nibble (as q4_0's, after the
/// exponent byte) names; the block's scale is 2^(e - 128).
int mxfp4_value(const std::byte* block, int i) {
  const int byte = std::to_integer<int>(block[1 + i % 16]);
  return mxfp4_values[i < 16 ? byte & 0xf : byte >> 4];
}

float mxfp4_scale(const std::byte* block) { return e8m0_half(block[0]); }

void gemm_mxfp4(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end, [&](const std::byte* w, const std::byte* x) {
    return dot_blocks32<17>(w, x, a.k, mxfp4_value, mxfp4_scale);
  });
}

void gemm_q4_1(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_affine32<20>(w, x, a.k, q4_1_value); });
}

void gemm_q5_1(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_affine32<24>(w, x, a.k, q5_1_value); });
}

void gemm_q8_0(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_blocks32<34>(w, x, a.k, q8_0_value); });
}

void gemm_q4_0(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_blocks32<18>(w, x, a.k, q4_0_value); });
}

void gemm_q5_0(const typed_gemm_args& a, int row_begin, int row_end) {
  for_outputs(a, row_begin, row_end,
              [&](const std::byte* w, const std::byte* x) { return dot_blocks32<22>(w, x, a.k, q5_0_value); });
}

void store_kv_f16(std::byte* dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) {
    const std::uint16_t h = float_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, sizeof(h));
  }
}

void store_kv_bf16(std::byte* dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) {
    const std::uint16_t h = float_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, sizeof(h));
  }
}

}  // namespace

void add_portable_k_kernels(cpu_kernel_table& t);  // quant_portable_k.cpp

void add_portable_quant_kernels(cpu_kernel_table& t) {
  t.weights[int(weight_type::f16)] = {gemm_f16, dequantize_f16};
  t.weights[int(weight_type::bf16)] = {gemm_bf16, dequantize_bf16};
  t.weights[int(weight_type::q8_0)] = {gemm_q8_0, dequantize_q8_0};
  t.weights[int(weight_type::q4_0)] = {gemm_q4_0, dequantize_q4_0};
  t.weights[int(weight_type::q5_0)] = {gemm_q5_0, dequantize_q5_0};
  t.weights[int(weight_type::q4_1)] = {gemm_q4_1, dequantize_q4_1};
  t.weights[int(weight_type::q5_1)] = {gemm_q5_1, dequantize_q5_1};
  t.weights[int(weight_type::iq4_nl)] = {gemm_iq4_nl, dequantize_iq4_nl};
  t.weights[int(weight_type::mxfp4)] = {gemm_mxfp4, dequantize_mxfp4};
  t.prepare[int(input_format::bf16)] = prepare_bf16;
  t.prepare[int(input_format::q8_0)] = prepare_q8_0;
  t.prepare[int(input_format::q8_k)] = prepare_q8_k;
  t.store_kv[int(kv_type::f16)] = store_kv_f16;
  t.store_kv[int(kv_type::bf16)] = store_kv_bf16;
  add_portable_k_kernels(t);
}

}  // namespace inflight::kernels::cpu
