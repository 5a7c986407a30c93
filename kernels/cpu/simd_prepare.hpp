#pragma once
// Input preparation (weight_types.hpp's formats) as templates over the vector traits;
// the bytes are those of the portable twin (quant_portable.cpp): the same scale, the
// same products and round-to-nearest-even. Internal linkage throughout.
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

/// One block of `count` (a multiple of V::width) inputs as int8; returns d, sets the
/// sums of each `sum_span` values (a multiple of V::width) in sums.
template <class V>
float simd_quantize_block(const float* x, int count, std::int8_t* q, int sum_span, int* sums) {
  auto vmax = V::zero();
  for (int i = 0; i < count; i += V::width) vmax = V::max(vmax, V::abs(V::load(x + i)));
  const float d = V::reduce_max(vmax) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  const auto vid = V::set1(id);
  auto sum = V::izero();
  for (int i = 0; i < count; i += V::width) {
    const auto qi = V::round_int(V::mul(V::load(x + i), vid));
    V::store_i8(q + i, qi);
    sum = V::iadd(sum, qi);
    if ((i + V::width) % sum_span == 0) {
      sums[i / sum_span] = V::reduce_add_int(sum);
      sum = V::izero();
    }
  }
  return d;
}

template <class V, int block, int sum_span>
void simd_prepare_q8(const prepare_args& a) {
  const auto format = block == 32 ? input_format::q8_0 : input_format::q8_k;
  const std::int64_t scales = prepared_scales_offset(a.k), sums_at = prepared_sums_offset(format, a.k);
  int sums[block / sum_span];
  for (int t = 0; t < a.n; ++t) {
    const float* x = a.x + t * a.ldx;
    std::byte* row = a.out + t * a.ld_out;
    for (std::int64_t c = a.col_begin; c < a.col_end; c += block) {
      const float d = simd_quantize_block<V>(x + c, block, reinterpret_cast<std::int8_t*>(row) + c, sum_span, sums);
      __builtin_memcpy(row + scales + c / block * 4, &d, sizeof(d));
      for (int s = 0; s < block / sum_span; ++s) {
        if (sum_span == 32) {
          __builtin_memcpy(row + sums_at + (c / 32 + s) * 4, &sums[s], sizeof(int));
        } else {
          const auto sum16 = std::int16_t(sums[s]);
          __builtin_memcpy(row + sums_at + (c / 16 + s) * 2, &sum16, sizeof(sum16));
        }
      }
    }
  }
}

/// float -> bf16 rounding to nearest even, NaN quieted (as float_to_bf16).
template <class V>
typename V::vi simd_to_bf16(typename V::vf x) {
  const auto u = V::as_int(x);
  const auto rounded = V::srl32(V::iadd(V::iadd(u, V::iset1(0x7fff)), V::iand(V::srl32(u, 16), V::iset1(1))), 16);
  const auto nan = V::ior(V::srl32(u, 16), V::iset1(0x40));
  return V::select(rounded, nan, V::iand(u, V::iset1(0x7fffffff)), V::iset1(0x7f800000));
}

template <class V>
void simd_prepare_bf16(const prepare_args& a) {
  for (int t = 0; t < a.n; ++t) {
    const float* x = a.x + t * a.ldx;
    auto* out = reinterpret_cast<std::uint16_t*>(a.out + t * a.ld_out);
    std::int64_t c = a.col_begin;
    for (; c + V::width <= a.col_end; c += V::width) V::store_u16(out + c, simd_to_bf16<V>(V::load(x + c)));
    for (; c < a.col_end; ++c) {
      std::uint32_t u;
      __builtin_memcpy(&u, x + c, sizeof(u));
      out[c] = (u & 0x7fffffffu) > 0x7f800000u ? std::uint16_t((u >> 16) | 0x40u)
                                               : std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu

namespace inflight::kernels::cpu {
namespace {

/// KV rows: floats converted to f16 (F16C, round to nearest even) or bf16 as they are written.
template <class V>
void simd_store_kv_f16(std::byte* dst, const float* src, int n) {
  int i = 0;
  for (; i + V::width <= n; i += V::width) V::store_f16(dst + 2 * i, V::load(src + i));
  for (; i < n; ++i) {
    const std::uint16_t h = float_to_fp16(src[i]);
    __builtin_memcpy(dst + 2 * i, &h, 2);
  }
}

template <class V>
void simd_store_kv_bf16(std::byte* dst, const float* src, int n) {
  int i = 0;
  for (; i + V::width <= n; i += V::width) V::store_u16(dst + 2 * i, simd_to_bf16<V>(V::load(src + i)));
  for (; i < n; ++i) {
    const std::uint16_t h = float_to_bf16(src[i]);
    __builtin_memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu
