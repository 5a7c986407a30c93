#pragma once
// Vector traits for AVX2 + FMA + F16C (256-bit registers), included only by the files
// compiled for that instruction set: everything here has internal linkage, so no
// function compiled for AVX2 can be picked by the linker for baseline code.
#if defined(__x86_64__)
// GCC 12's intrinsic headers initialize "undefined" registers from themselves.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace inflight::kernels::cpu {
namespace {

struct avx2_traits {
  using vf = __m256;
  using vi = __m256i;
  using mask = __m256i;  // all-ones lanes are active
  static constexpr int width = 8;            // floats per register
  static constexpr int max_tile_tokens = 2;  // 4 x 2 accumulators + 4 weight + 1 input register of 16
  static constexpr float exp_max = 88.37f;

  static mask first_lanes(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static vf zero() { return _mm256_setzero_ps(); }
  static vf set1(float x) { return _mm256_set1_ps(x); }
  static vf load(const float* p) { return _mm256_loadu_ps(p); }
  static vf maskz_load(mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void mask_store(float* p, mask m, vf v) { _mm256_maskstore_ps(p, m, v); }
  static void store(float* p, vf v) { _mm256_storeu_ps(p, v); }
  static vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
  static vf add(vf a, vf b) { return _mm256_add_ps(a, b); }
  static vf sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
  static vf mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
  static vf div(vf a, vf b) { return _mm256_div_ps(a, b); }
  static vf max(vf a, vf b) { return _mm256_max_ps(a, b); }
  /// Zero in the inactive lanes.
  static vf and_mask(vf v, mask m) { return _mm256_and_ps(v, _mm256_castsi256_ps(m)); }

  /// {sum(a), sum(b), sum(c), sum(d)}; each sum uses its own lanes only, in a fixed order.
  static __m128 reduce4(vf a, vf b, vf c, vf d) {
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
  }
  static float reduce(vf a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }
  static float reduce_max(vf a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  /// The first `count` (<= 4) lanes of p; the others zero.
  static __m128 load4(const float* p, int count) {
    return _mm_maskload_ps(p, _mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 1, 2, 3)));
  }
  static void store4(float* p, int count, __m128 v) {
    _mm_maskstore_ps(p, _mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 1, 2, 3)), v);
  }

  /// exp(x) to about 1 ulp: 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, p of degree 6.
  static vf exp(vf x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33f)), _mm256_set1_ps(exp_max));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  }

  /// 8 halves or bf16 values as floats.
  static vf load_f16(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
  static vf load_bf16(const void* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
  }
};

}  // namespace
}  // namespace inflight::kernels::cpu
#endif
