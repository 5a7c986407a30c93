#pragma once
// Vector traits for AVX-512 with VNNI and BF16: the AVX-512 traits with the byte and
// word dot products of VNNI. Included only by files compiled for that instruction set.
#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512.hpp"

namespace inflight::kernels::cpu {
namespace {

struct avx512_vnni_traits : avx512_traits {
  static constexpr bool has_vnni = true;
  static vi dot_u8s8(vi acc, vi u, vi s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static vi dot_s16(vi acc, vi a, vi b) { return _mm512_dpwssd_epi32(acc, a, b); }
};

}  // namespace
}  // namespace inflight::kernels::cpu
#endif
