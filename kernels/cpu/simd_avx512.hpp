#pragma once
// Vector traits for AVX-512 F, VL, DQ, BW (512-bit registers), included only by the
// files compiled for that instruction set: everything here has internal linkage, so no
// function compiled for AVX-512 can be picked by the linker for baseline code.
#if defined(__x86_64__)
// GCC 12's intrinsic headers initialize "undefined" registers from themselves.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace inflight::kernels::cpu {
namespace {

struct avx512_traits {
  using vf = __m512;
  using vi = __m512i;
  using mask = __mmask16;
  static constexpr int width = 16;           // floats per register
  static constexpr int max_tile_tokens = 6;  // 4 x 6 accumulators + 4 weight + 1 input register of 32
  static constexpr float exp_max = 88.72f;

  static mask first_lanes(int count) {
    return count >= width ? mask(0xffff) : (count <= 0 ? mask(0) : mask((1u << count) - 1u));
  }
  static vf zero() { return _mm512_setzero_ps(); }
  static vf set1(float x) { return _mm512_set1_ps(x); }
  static vf load(const float* p) { return _mm512_loadu_ps(p); }
  static vf maskz_load(mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void mask_store(float* p, mask m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
  static void store(float* p, vf v) { _mm512_storeu_ps(p, v); }
  static vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
  static vf add(vf a, vf b) { return _mm512_add_ps(a, b); }
  static vf sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
  static vf mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
  static vf div(vf a, vf b) { return _mm512_div_ps(a, b); }
  static vf max(vf a, vf b) { return _mm512_max_ps(a, b); }
  /// Zero in the inactive lanes.
  static vf and_mask(vf v, mask m) { return _mm512_maskz_mov_ps(m, v); }

  /// {sum(a), sum(b), sum(c), sum(d)}; each sum uses its own lanes only, in a fixed order.
  static __m128 reduce4(vf a, vf b, vf c, vf d) {
    const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    const __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
    const __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
    const __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
  }
  static float reduce(vf a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }
  static float reduce_max(vf a) { return _mm512_reduce_max_ps(a); }
  /// The first `count` (<= 4) lanes of p; the others zero.
  static __m128 load4(const float* p, int count) { return _mm_maskz_loadu_ps(__mmask8((1u << count) - 1u), p); }
  static void store4(float* p, int count, __m128 v) { _mm_mask_storeu_ps(p, __mmask8((1u << count) - 1u), v); }

  /// exp(x) to about 1 ulp: 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, p of degree 6.
  static vf exp(vf x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33f)), _mm512_set1_ps(exp_max));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
  }

  /// 16 halves or bf16 values as floats.
  static vf load_f16(const void* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
  static vf load_bf16(const void* p) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))), 16));
  }
};

}  // namespace
}  // namespace inflight::kernels::cpu
#endif
