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
  static constexpr bool has_vnni = false;
  static constexpr float exp_max = 88.72f;

  static mask first_lanes(int count) {
    return count >= width ? mask(0xffff) : (count <= 0 ? mask(0) : mask((1u << count) - 1u));
  }
  static vf zero() { return _mm512_setzero_ps(); }
  static vf set1(float x) { return _mm512_set1_ps(x); }
  static vf load(const float* p) { return _mm512_loadu_ps(p); }
  static vf maskz_load(mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  /// The active lanes of p, `fill` in the others.
  static vf mask_load(mask m, const float* p, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), m, p); }
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

  // ---- integers: 16 lanes of 32 bits; byte dot products with AVX-512 BW ----
  static vi izero() { return _mm512_setzero_si512(); }
  static vi iset1(int x) { return _mm512_set1_epi32(x); }
  static vi bcast32(const void* p) {
    int v;
    __builtin_memcpy(&v, p, sizeof(v));
    return _mm512_set1_epi32(v);
  }
  static vi iload(const void* p) { return _mm512_loadu_si512(p); }
  static void istore(void* p, vi v) { _mm512_storeu_si512(p, v); }
  static vi iadd(vi a, vi b) { return _mm512_add_epi32(a, b); }
  static vi iand(vi a, vi b) { return _mm512_and_si512(a, b); }
  static vi ior(vi a, vi b) { return _mm512_or_si512(a, b); }
  static vi srl32(vi a, int n) { return _mm512_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi sll32(vi a, int n) { return _mm512_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi sra32(vi a, int n) { return _mm512_sra_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi mullo(vi a, vi b) { return _mm512_mullo_epi32(a, b); }
  static vf cvt(vi a) { return _mm512_cvtepi32_ps(a); }
  /// The low / high 16 bits of each lane as a half, as floats.
  static vf half_lo(vi a) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(a)); }
  static vf half_hi(vi a) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(a, 16))); }
  /// acc + per lane sum of the four products u8 (u) x s8 (s); u <= 127 or pairs that do not saturate int16.
  static vi dot_u8s8(vi acc, vi u, vi s) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
  }
  /// acc + per lane sum of the two int16 products.
  static vi dot_s16(vi acc, vi a, vi b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
  /// s with the sign of w applied byte by byte (0 where w is 0 need not be: |w| is 0 there).
  static vi sign_bytes(vi s, vi w) {
    return _mm512_mask_sub_epi8(s, _mm512_movepi8_mask(w), _mm512_setzero_si512(), s);
  }
  static vi abs_bytes(vi w) { return _mm512_abs_epi8(w); }
  static vi xor_bytes(vi a, vi b) { return _mm512_xor_si512(a, b); }
  /// 16 dwords at byte offsets idx from base.
  static vi gather32(const void* base, vi idx) { return _mm512_i32gather_epi32(idx, base, 1); }
  static vi lane_index() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
  static vi isub(vi a, vi b) { return _mm512_sub_epi32(a, b); }
  static vi as_int(vf v) { return _mm512_castps_si512(v); }
  static vf abs(vf v) { return _mm512_abs_ps(v); }
  /// Round to nearest even (the default rounding mode).
  static vi round_int(vf v) { return _mm512_cvtps_epi32(v); }
  static int reduce_add_int(vi v) { return _mm512_reduce_add_epi32(v); }
  /// The lanes as int8 (saturated) / as their low 16 bits, stored at p.
  static void store_i8(void* p, vi v) { _mm_storeu_si128(static_cast<__m128i*>(p), _mm512_cvtsepi32_epi8(v)); }
  static void store_u16(void* p, vi v) { _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v)); }
  static vi select(vi if_false, vi if_true, vi a, vi b_greater) {
    return _mm512_mask_mov_epi32(if_false, _mm512_cmpgt_epi32_mask(a, b_greater), if_true);
  }

  /// rows[r] + offset, 16 bytes from each of the 16 rows, as four registers of dwords:
  /// out[g] lane p holds dword g of row row_of_lane(p) (a 4 x 4 transpose per 128 bits).
  static void transpose16(const std::byte* const* rows, std::int64_t offset, vi* out) {
    vi z[4];
    for (int i = 0; i < 4; ++i) {
      __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[4 * i] + offset)));
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[4 * i + 1] + offset)), 1);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[4 * i + 2] + offset)), 2);
      z[i] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[4 * i + 3] + offset)), 3);
    }
    // z[i] lane 4L + j holds dword j of row 4i + L.
    const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
    out[0] = _mm512_unpacklo_epi64(t0, t2);
    out[1] = _mm512_unpackhi_epi64(t0, t2);
    out[2] = _mm512_unpacklo_epi64(t1, t3);
    out[3] = _mm512_unpackhi_epi64(t1, t3);
  }
  /// The row whose values lane p holds after transpose16.
  static constexpr int row_of_lane(int p) { return 4 * (p % 4) + p / 4; }
  /// v with lane p moved to lane row_of_lane(p): lanes in row order.
  static vf to_row_order(vf v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
  }

  static void store_f16(void* p, vf v) {
    _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  /// Two registers of 8 halves as 16 floats.
  static vf halves8(const __m128i* h) { return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(h[0]), h[1], 1)); }
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
