#pragma once
// One token against q4_k or q6_k weights (AVX-512BW): the rows are read as they lie in
// memory, four at a time, against the token's q8_k input. The tiled kernels of
// simd_quantk.hpp decode 16 rows into lane order per chunk of super-blocks, which pays
// off when many tokens share the decoded tile; for one token it is pure cost, and a
// decode step is one token per sequence.
//
// Each super-block's integer sums are the exact integers of the tiled kernels and the
// float steps are theirs, in the same order (f = fma(isum, d * dx, f), then for q4_k
// f = fma(msum, -dmin * dx, f)), so a row's result has the same bits whichever kernel
// computes it: rows stay batch-invariant.
//
// q4_k keeps 64 values per 32 bytes (low nibbles: values 0..31, high: 32..63), so one
// 64-byte load of its levels holds, in its low nibbles, values 0..31 and 64..95 of a
// 128-value half. The token's input is copied once per call into that order:
//
//   natural   [ 0..31 | 32..63 | 64..95 | 96..127 ]   per 128 values
//   arranged  [ 0..31 | 64..95 | 32..63 | 96..127 ]   low nibbles, then high nibbles
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"
#include "kernels/cpu/simd_quantk.hpp"
#include "kernels/cpu/weight_types.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int gemv_rows = 4;  // rows whose sums share one reduction
// Rows are read ahead by software: the hardware prefetchers stop at page boundaries,
// and four streams cross one every few blocks.
constexpr int gemv_prefetch_bytes = 1024;

/// Control bytes of _mm512_shuffle_epi8 that spread int16 scales over a register of
/// maddubs pairs: 128-bit lane L of table t takes the int16 at index[t][L] (high byte 0
/// for q4_k's unsigned bytes, where the index names a byte).
struct scale_spread {
  alignas(64) std::uint8_t bytes[4][64];
};

/// q4_k: the 8 scale bytes; registers (2c, 2c + 1) are the low / high nibbles of half c:
/// lanes 0-1 take sub-block 4c (+1 for high), lanes 2-3 sub-block 4c + 2 (+1).
inline const scale_spread& q4k_spread() {
  static const scale_spread s = [] {
    scale_spread t{};
    for (int r = 0; r < 4; ++r) {
      const int c = r / 2, high = r % 2;
      for (int lane = 0; lane < 4; ++lane) {
        const int sub = 4 * c + high + (lane < 2 ? 0 : 2);
        for (int i = 0; i < 8; ++i) {
          t.bytes[r][16 * lane + 2 * i] = std::uint8_t(sub);
          t.bytes[r][16 * lane + 2 * i + 1] = 0x80;  // zero
        }
      }
    }
    return t;
  }();
  return s;
}

/// q6_k: the 8 int16 scales of one half; register 0 (low nibbles) has sub-blocks 0-3 of
/// the half in its four lanes, register 1 sub-blocks 4-7.
inline const scale_spread& q6k_spread() {
  static const scale_spread s = [] {
    scale_spread t{};
    for (int r = 0; r < 2; ++r) {
      for (int lane = 0; lane < 4; ++lane) {
        const int sub = 4 * r + lane;
        for (int i = 0; i < 8; ++i) {
          t.bytes[r][16 * lane + 2 * i] = std::uint8_t(2 * sub);
          t.bytes[r][16 * lane + 2 * i + 1] = std::uint8_t(2 * sub + 1);
        }
      }
    }
    return t;
  }();
  return s;
}

inline __m512i load_spread(const scale_spread& s, int r) { return _mm512_load_si512(s.bytes[r]); }

/// The token's q8_k input for one call: values, per-super-block scales, and sums.
struct gemv_input {
  const std::int8_t* q = nullptr;     // q4_k: arranged (see above); q6_k: natural order
  const float* dx = nullptr;          // one per 256 values
  const std::int16_t* sums = nullptr; // q4_k: per 32 values; q6_k: per 16 (the prepared ones)
};

/// q4_k's input, arranged, with the sums of each 32 values; the buffers live per thread.
inline gemv_input arrange_q4k_input(const typed_gemm_args& a) {
  thread_local std::vector<std::int8_t> values;
  thread_local std::vector<std::int16_t> sums32;
  values.resize(std::size_t(a.k) + 64);
  sums32.resize(std::size_t(a.k) / 32);
  const auto* x = reinterpret_cast<const std::int8_t*>(a.x);
  auto* out = reinterpret_cast<std::int8_t*>((reinterpret_cast<std::uintptr_t>(values.data()) + 63) & ~std::uintptr_t(63));
  for (int i = 0; i < a.k; i += 128) {
    std::memcpy(out + i, x + i, 32);
    std::memcpy(out + i + 32, x + i + 64, 32);
    std::memcpy(out + i + 64, x + i + 32, 32);
    std::memcpy(out + i + 96, x + i + 96, 32);
  }
  const auto* sums16 = reinterpret_cast<const std::int16_t*>(a.x + prepared_sums_offset(input_format::q8_k, a.k));
  for (int j = 0; j < a.k / 32; ++j) sums32[j] = std::int16_t(sums16[2 * j] + sums16[2 * j + 1]);
  return {out, reinterpret_cast<const float*>(a.x + prepared_scales_offset(a.k)), sums32.data()};
}

inline gemv_input natural_input(const typed_gemm_args& a) {
  return {reinterpret_cast<const std::int8_t*>(a.x), reinterpret_cast<const float*>(a.x + prepared_scales_offset(a.k)),
          reinterpret_cast<const std::int16_t*>(a.x + prepared_sums_offset(input_format::q8_k, a.k))};
}

/// q4_k's 6-bit scales and mins of one super-block (bytes 4..15), 8 bytes each.
inline void q4k_scales(const std::byte* block, std::uint64_t& scales, std::uint64_t& mins) {
  std::uint32_t h1, h2, h3;
  std::memcpy(&h1, block + 4, 4);
  std::memcpy(&h2, block + 8, 4);
  std::memcpy(&h3, block + 12, 4);
  constexpr std::uint32_t six = 0x3f3f3f3f, four = 0x0f0f0f0f, two = 0x03030303;
  const std::uint32_t sc_hi = (h3 & four) | (((h1 >> 6) & two) << 4);
  const std::uint32_t m_hi = ((h3 >> 4) & four) | (((h2 >> 6) & two) << 4);
  scales = (h1 & six) | std::uint64_t(sc_hi) << 32;
  mins = (h2 & six) | std::uint64_t(m_hi) << 32;
}

/// One q4_k super-block of one row: sum over sub-blocks of scale x dot, in 16 lanes,
/// and sum of min x (input sum), in 4 lanes.
inline void q4k_block(const std::byte* block, const std::int8_t* x, const std::int16_t* sums32, __m512i& dot,
                      __m128i& min) {
  std::uint64_t scales, mins;
  q4k_scales(block, scales, mins);
  const __m512i sc = _mm512_broadcast_i32x4(_mm_cvtsi64_si128(static_cast<long long>(scales)));
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const auto* qs = reinterpret_cast<const std::uint8_t*>(block) + 16;
  const scale_spread& spread = q4k_spread();
  __m512i acc = _mm512_setzero_si512();
  for (int c = 0; c < 2; ++c) {
    const __m512i raw = _mm512_loadu_si512(qs + 64 * c);
    const __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    const __m512i plo = _mm512_maddubs_epi16(lo, _mm512_load_si512(x + 128 * c));
    const __m512i phi = _mm512_maddubs_epi16(hi, _mm512_load_si512(x + 128 * c + 64));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(plo, _mm512_shuffle_epi8(sc, load_spread(spread, 2 * c))));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(phi, _mm512_shuffle_epi8(sc, load_spread(spread, 2 * c + 1))));
  }
  dot = acc;
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(mins)));
  min = _mm_madd_epi16(m16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(sums32)));
}

/// One q6_k super-block of one row: sum over sub-blocks of scale x (dot - 32 x input
/// sum), in 16 lanes.
inline __m512i q6k_block(const std::byte* block, const std::int8_t* x, const std::int16_t* sums16) {
  const auto* ql = reinterpret_cast<const std::uint8_t*>(block);
  const auto* qh = ql + 128;
  const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ql + 192)));
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  const __m512i up_shift = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4), down_shift = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  const scale_spread& spread = q6k_spread();
  __m512i acc = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    const __m512i sc = _mm512_broadcast_i32x4(h == 0 ? _mm256_castsi256_si128(sc16) : _mm256_extracti128_si256(sc16, 1));
    const __m512i raw = _mm512_loadu_si512(ql + 64 * h);
    const __m512i high = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * h)));
    const __m512i q0 = _mm512_or_si512(_mm512_and_si512(raw, low4), _mm512_and_si512(_mm512_sllv_epi64(high, up_shift), bits45));
    const __m512i q1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low4),
                                       _mm512_and_si512(_mm512_srlv_epi64(high, down_shift), bits45));
    const __m512i p0 = _mm512_maddubs_epi16(q0, _mm512_loadu_si512(x + 128 * h));
    const __m512i p1 = _mm512_maddubs_epi16(q1, _mm512_loadu_si512(x + 128 * h + 64));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p0, _mm512_shuffle_epi8(sc, load_spread(spread, 0))));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(p1, _mm512_shuffle_epi8(sc, load_spread(spread, 1))));
  }
  const __m256i offset = _mm256_madd_epi16(sc16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums16)));
  return _mm512_sub_epi32(acc, _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 5)));
}

/// The four lane totals of four 16-lane vectors: [sum a0, sum a1, sum a2, sum a3].
inline __m128i sum4(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
  const __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  const __m256i v = _mm256_add_epi32(_mm512_castsi512_si256(u), _mm512_extracti64x4_epi64(u, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

inline __m128i sum4(__m128i a0, __m128i a1, __m128i a2, __m128i a3) {
  const __m128i t01 = _mm_add_epi32(_mm_unpacklo_epi32(a0, a1), _mm_unpackhi_epi32(a0, a1));
  const __m128i t23 = _mm_add_epi32(_mm_unpacklo_epi32(a2, a3), _mm_unpackhi_epi32(a2, a3));
  return _mm_add_epi32(_mm_unpacklo_epi64(t01, t23), _mm_unpackhi_epi64(t01, t23));
}

/// The 32 bits at byte `at` of four blocks, one per lane, built in registers (four
/// narrow stores read back as one vector would miss store-to-load forwarding).
inline __m128i words4(const std::byte* const* blocks, std::int64_t at) {
  auto word = [&](int r) {
    std::int32_t w;
    std::memcpy(&w, blocks[r] + at, 4);
    return w;
  };
  __m128i v = _mm_cvtsi32_si128(word(0));
  v = _mm_insert_epi32(v, word(1), 1);
  v = _mm_insert_epi32(v, word(2), 2);
  return _mm_insert_epi32(v, word(3), 3);
}

/// The fp16 pairs (d, dmin) at the start of four q4_k blocks, as d and dmin floats.
inline void q4k_d_dmin(const std::byte* const* blocks, __m128& d, __m128& dmin) {
  const __m128i firsts = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  const __m256 both = _mm256_cvtph_ps(_mm_shuffle_epi8(words4(blocks, 0), firsts));
  d = _mm256_castps256_ps128(both);
  dmin = _mm256_extractf128_ps(both, 1);
}

/// The fp16 d at byte 208 of four q6_k blocks: the high half of the word at 206, so
/// that no read passes the block's last byte.
inline __m128 q6k_d(const std::byte* const* blocks) {
  const __m128i highs = _mm_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
  return _mm_cvtph_ps(_mm_shuffle_epi8(words4(blocks, 206), highs));
}

template <bool is_q4>
void gemv_k_rows(const typed_gemm_args& a, const gemv_input& in, int o, int count) {
  constexpr int block_bytes = is_q4 ? 144 : 210;
  const int num_blocks = a.k / 256;
  const std::byte* row[gemv_rows];
  for (int r = 0; r < gemv_rows; ++r) row[r] = a.w.data + std::int64_t(o + (r < count ? r : count - 1)) * a.w.row_bytes;
  __m128 f = _mm_setzero_ps();
  for (int b = 0; b < num_blocks; ++b) {
    const std::byte* block[gemv_rows];
    for (int r = 0; r < gemv_rows; ++r) block[r] = row[r] + std::int64_t(b) * block_bytes;
    for (int r = 0; r < gemv_rows; ++r) {
      const char* ahead = reinterpret_cast<const char*>(block[r]) + gemv_prefetch_bytes;
      for (int line = 0; line < block_bytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
    }
    const std::int8_t* x = in.q + 256 * b;
    const __m128 dx = _mm_set1_ps(in.dx[b]);
    if constexpr (is_q4) {
      __m512i dot[gemv_rows];
      __m128i min[gemv_rows];
      for (int r = 0; r < gemv_rows; ++r) q4k_block(block[r], x, in.sums + 8 * b, dot[r], min[r]);
      __m128 d, dmin;
      q4k_d_dmin(block, d, dmin);
      dmin = _mm_sub_ps(_mm_setzero_ps(), dmin);
      f = _mm_fmadd_ps(_mm_cvtepi32_ps(sum4(dot[0], dot[1], dot[2], dot[3])), _mm_mul_ps(d, dx), f);
      f = _mm_fmadd_ps(_mm_cvtepi32_ps(sum4(min[0], min[1], min[2], min[3])), _mm_mul_ps(dmin, dx), f);
    } else {
      __m512i dot[gemv_rows];
      for (int r = 0; r < gemv_rows; ++r) dot[r] = q6k_block(block[r], x, in.sums + 16 * b);
      const __m128 d = q6k_d(block);
      f = _mm_fmadd_ps(_mm_cvtepi32_ps(sum4(dot[0], dot[1], dot[2], dot[3])), _mm_mul_ps(d, dx), f);
    }
  }
  const __mmask8 m = __mmask8((1u << count) - 1u);
  float* y = a.y + o;
  if (a.accumulate) f = _mm_add_ps(_mm_maskz_loadu_ps(m, y), f);
  _mm_mask_storeu_ps(y, m, f);
}

/// q4_k (is_q4) or q6_k weights x one token's q8_k input, rows [row_begin, row_end).
template <bool is_q4>
void gemv_k(const typed_gemm_args& a, int row_begin, int row_end) {
  const gemv_input in = is_q4 ? arrange_q4k_input(a) : natural_input(a);
  for (int o = row_begin; o < row_end; o += gemv_rows) {
    gemv_k_rows<is_q4>(a, in, o, row_end - o < gemv_rows ? row_end - o : gemv_rows);
  }
}

/// The k-quant kernel of a vector table: one token by rows as they lie (q4_k, q6_k),
/// several by the tiled kernel.
template <class V, k_type K>
void gemm_k_by_tokens(const typed_gemm_args& a, int row_begin, int row_end) {
  if constexpr (K == k_type::q4_k || K == k_type::q6_k) {
    if (a.n == 1) return gemv_k<K == k_type::q4_k>(a, row_begin, row_end);
  }
  gemm_k<V, K>(a, row_begin, row_end);
}

}  // namespace
}  // namespace inflight::kernels::cpu
