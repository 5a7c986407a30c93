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
  static constexpr bool has_vnni = false;
  static constexpr float exp_max = 88.37f;

  static mask first_lanes(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static vf zero() { return _mm256_setzero_ps(); }
  static vf set1(float x) { return _mm256_set1_ps(x); }
  static vf load(const float* p) { return _mm256_loadu_ps(p); }
  static vf maskz_load(mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  /// The active lanes of p, `fill` in the others.
  static vf mask_load(mask m, const float* p, float fill) {
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
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

  // ---- integers: 8 lanes of 32 bits; byte dot products with AVX2 ----
  static vi izero() { return _mm256_setzero_si256(); }
  static vi iset1(int x) { return _mm256_set1_epi32(x); }
  static vi bcast32(const void* p) {
    int v;
    __builtin_memcpy(&v, p, sizeof(v));
    return _mm256_set1_epi32(v);
  }
  static vi iload(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void istore(void* p, vi v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static vi iadd(vi a, vi b) { return _mm256_add_epi32(a, b); }
  static vi iand(vi a, vi b) { return _mm256_and_si256(a, b); }
  static vi ior(vi a, vi b) { return _mm256_or_si256(a, b); }
  static vi srl32(vi a, int n) { return _mm256_srl_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi sll32(vi a, int n) { return _mm256_sll_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi sra32(vi a, int n) { return _mm256_sra_epi32(a, _mm_cvtsi32_si128(n)); }
  static vi mullo(vi a, vi b) { return _mm256_mullo_epi32(a, b); }
  static vf cvt(vi a) { return _mm256_cvtepi32_ps(a); }
  /// The low / high 16 bits of each lane as a half, as floats.
  static vf half_lo(vi a) {
    const __m256i lo = _mm256_and_si256(a, _mm256_set1_epi32(0xffff));
    return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
  }
  static vf half_hi(vi a) { return half_lo(_mm256_srli_epi32(a, 16)); }
  /// acc + per lane sum of the four products u8 (u) x s8 (s); pairs must not saturate int16.
  static vi dot_u8s8(vi acc, vi u, vi s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
  }
  /// acc + per lane sum of the two int16 products.
  static vi dot_s16(vi acc, vi a, vi b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static vi sign_bytes(vi s, vi w) { return _mm256_sign_epi8(s, w); }
  static vi abs_bytes(vi w) { return _mm256_abs_epi8(w); }
  static vi xor_bytes(vi a, vi b) { return _mm256_xor_si256(a, b); }
  /// 8 dwords at byte offsets idx from base.
  static vi gather32(const void* base, vi idx) { return _mm256_i32gather_epi32(static_cast<const int*>(base), idx, 1); }
  static vi lane_index() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static vi isub(vi a, vi b) { return _mm256_sub_epi32(a, b); }
  static vi as_int(vf v) { return _mm256_castps_si256(v); }
  static vf abs(vf v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
  /// Round to nearest even (the default rounding mode).
  static vi round_int(vf v) { return _mm256_cvtps_epi32(v); }
  static int reduce_add_int(vi v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
  }
  /// The lanes as int8 (saturated) / as their low 16 bits, stored at p.
  static void store_i8(void* p, vi v) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(static_cast<__m128i*>(p), _mm_packs_epi16(w, w));
  }
  static void store_u16(void* p, vi v) {
    const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm_packus_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
  }
  static vi select(vi if_false, vi if_true, vi a, vi b_greater) {
    return _mm256_blendv_epi8(if_false, if_true, _mm256_cmpgt_epi32(a, b_greater));
  }

  /// rows[r] + offset, 16 bytes from each of the 8 rows, as four registers of dwords:
  /// out[g] lane p holds dword g of row row_of_lane(p) (a 4 x 4 transpose per 128 bits).
  static void transpose16(const std::byte* const* rows, std::int64_t offset, vi* out) {
    vi z[4];
    for (int i = 0; i < 4; ++i) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * i] + offset));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2 * i + 1] + offset));
      z[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    // z[i] lane 4L + j holds dword j of row 2i + L.
    const __m256i t0 = _mm256_unpacklo_epi32(z[0], z[1]), t1 = _mm256_unpackhi_epi32(z[0], z[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(z[2], z[3]), t3 = _mm256_unpackhi_epi32(z[2], z[3]);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
  }
  /// The row whose values lane p holds after transpose16.
  static constexpr int row_of_lane(int p) { return 2 * (p % 4) + p / 4; }
  /// v with lane p moved to lane row_of_lane(p): lanes in row order.
  static vf to_row_order(vf v) { return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); }

  static void store_f16(void* p, vf v) {
    _mm_storeu_si128(static_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  /// One register of 8 halves as 8 floats.
  static vf halves8(const __m128i* h) { return _mm256_cvtph_ps(h[0]); }
  /// 8 halves or bf16 values as floats.
  static vf load_f16(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }
  static vf load_bf16(const void* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
  }
};

}  // namespace
}  // namespace inflight::kernels::cpu
#endif
