#pragma once
// Products over the k-quant types (q2_k, q3_k, q4_k, q5_k, q6_k: 256-value super-blocks
// with sub-block scales) as templates over the vector traits, tiled as simd_quant32.hpp: a
// tile of V::width rows is decoded once per chunk of super-blocks into registers whose
// lanes are the rows, then each (row, token) runs quant_portable_k.cpp's chain with
// fused multiply-adds; the integer sums are exact, so every vector table gives the
// same bits and a token's results do not depend on its batch.
#include "kernels/cpu/simd_quant32.hpp"

namespace inflight::kernels::cpu {
namespace {

template <class V>
struct tilek {
  static constexpr int chunk_blocks = 4;  // 1024 values
  typename V::vi q[chunk_blocks][64];     // values 4g..4g+3 of the super-block, unsigned
  typename V::vi sc[chunk_blocks][16];    // sub-block scales (8 for q4_k / q5_k, 16 for the others)
  // int16 pairs x bsum pairs: mins (m_j, m_j) for q4_k / q5_k, (m_2p, m_2p+1) for q2_k; the
  // levels' offsets (-32 sc_2p, -32 sc_2p+1) for q6_k, (-4 sc_2p, -4 sc_2p+1) for q3_k
  typename V::vi pair[chunk_blocks][8];
  typename V::vf d[chunk_blocks], dmin[chunk_blocks];  // dmin negated
};

/// q4_k / q5_k: d, dmin, the 6-bit scales and mins of super-block b (16 bytes at `at`).
template <class V>
void decode_affine_scales(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t at) {
  using vi = typename V::vi;
  vi h[4];
  V::transpose16(rows.row, at, h);
  tile.d[b] = V::half_lo(h[0]);
  tile.dmin[b] = V::sub(V::zero(), V::half_hi(h[0]));
  const vi six = V::iset1(0x3f3f3f3f), four = V::iset1(0x0f0f0f0f), two = V::iset1(0x03030303);
  const vi sc_lo = V::iand(h[1], six), m_lo = V::iand(h[2], six);
  const vi sc_hi = V::ior(V::iand(h[3], four), V::sll32(V::iand(V::srl32(h[1], 6), two), 4));
  const vi m_hi = V::ior(V::iand(V::srl32(h[3], 4), four), V::sll32(V::iand(V::srl32(h[2], 6), two), 4));
  const vi byte = V::iset1(0xff);
  for (int j = 0; j < 8; ++j) {
    const int shift = 8 * (j % 4);
    tile.sc[b][j] = V::iand(V::srl32(j < 4 ? sc_lo : sc_hi, shift), byte);
    const vi m = V::iand(V::srl32(j < 4 ? m_lo : m_hi, shift), byte);
    tile.pair[b][j] = V::ior(m, V::sll32(m, 16));
  }
}

/// q4_k / q5_k (qh_at < 0: no fifth bits): the 256 levels of super-block b.
template <class V>
void decode_affine_levels(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t qs_at, std::int64_t qh_at) {
  using vi = typename V::vi;
  const vi low4 = V::iset1(0x0f0f0f0f), one = V::iset1(0x01010101);
  vi qh[8];
  if (qh_at >= 0) {
    V::transpose16(rows.row, qh_at, qh);
    V::transpose16(rows.row, qh_at + 16, qh + 4);
  }
  for (int c = 0; c < 4; ++c) {  // 64 values: low nibbles of 32 bytes, then high nibbles
    vi raw[8];
    V::transpose16(rows.row, qs_at + 32 * c, raw);
    V::transpose16(rows.row, qs_at + 32 * c + 16, raw + 4);
    for (int g = 0; g < 8; ++g) {
      vi lo = V::iand(raw[g], low4), hi = V::iand(V::srl32(raw[g], 4), low4);
      if (qh_at >= 0) {  // value 64c + 4g + i (+ 32) takes bit 2c (2c + 1) of qh[4g + i]
        lo = V::ior(lo, V::sll32(V::iand(V::srl32(qh[g], 2 * c), one), 4));
        hi = V::ior(hi, V::sll32(V::iand(V::srl32(qh[g], 2 * c + 1), one), 4));
      }
      tile.q[b][16 * c + g] = lo;
      tile.q[b][16 * c + 8 + g] = hi;
    }
  }
}

/// q6_k: d, the 16 int8 scales and the 6-bit levels of super-block b (210 bytes at `at`).
template <class V>
void decode_q6(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t at) {
  using vi = typename V::vi;
  rows.halves(at + 208, 0, 1, tile.d + b);
  vi s[4];
  V::transpose16(rows.row, at + 192, s);
  for (int j = 0; j < 16; ++j) tile.sc[b][j] = V::sra32(V::sll32(s[j / 4], 24 - 8 * (j % 4)), 24);
  const vi low16 = V::iset1(0xffff);
  for (int p = 0; p < 8; ++p) {
    const vi lo = V::iand(V::mullo(tile.sc[b][2 * p], V::iset1(-32)), low16);
    tile.pair[b][p] = V::ior(lo, V::sll32(V::mullo(tile.sc[b][2 * p + 1], V::iset1(-32)), 16));
  }
  const vi low4 = V::iset1(0x0f0f0f0f), two = V::iset1(0x03030303);
  for (int half = 0; half < 2; ++half) {
    vi ql[16], qh[8];
    for (int i = 0; i < 4; ++i) V::transpose16(rows.row, at + 64 * half + 16 * i, ql + 4 * i);
    V::transpose16(rows.row, at + 128 + 32 * half, qh);
    V::transpose16(rows.row, at + 128 + 32 * half + 16, qh + 4);
    for (int g = 0; g < 4; ++g) {  // values 128 half + 32 g + l: nibble of ql[32 (g % 2) + l], bits 2g of qh[l]
      for (int i = 0; i < 8; ++i) {
        const vi low = V::iand(V::srl32(ql[8 * (g % 2) + i], g < 2 ? 0 : 4), low4);
        const vi high = V::sll32(V::iand(V::srl32(qh[i], 2 * g), two), 4);
        tile.q[b][32 * half + 8 * g + i] = V::ior(low, high);
      }
    }
  }
}

/// q2_k / q3_k: the 2-bit levels of super-block b (qs[64] at qs_at; in each half of 128,
/// value 32g + l takes bits 2g, 2g+1 of byte l), plus q3_k's third bits as 4 (hmask[32]
/// at hm_at, bit 4 half + g of byte l; hm_at < 0: none): values 0..3 or 0..7.
template <class V>
void decode_levels2(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t qs_at, std::int64_t hm_at) {
  using vi = typename V::vi;
  const vi two = V::iset1(0x03030303), one = V::iset1(0x01010101);
  vi hm[8];
  if (hm_at >= 0) {
    V::transpose16(rows.row, hm_at, hm);
    V::transpose16(rows.row, hm_at + 16, hm + 4);
  }
  for (int half = 0; half < 2; ++half) {
    vi raw[8];
    V::transpose16(rows.row, qs_at + 32 * half, raw);
    V::transpose16(rows.row, qs_at + 32 * half + 16, raw + 4);
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 8; ++i) {  // values 128 half + 32 g + 4i .. + 3
        vi level = V::iand(V::srl32(raw[i], 2 * g), two);
        if (hm_at >= 0) level = V::ior(level, V::sll32(V::iand(V::srl32(hm[i], 4 * half + g), one), 2));
        tile.q[b][32 * half + 8 * g + i] = level;
      }
    }
  }
}

/// q2_k: d, dmin, the 4-bit scales and mins and the levels of super-block b (84 bytes at `at`).
template <class V>
void decode_q2(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t at) {
  using vi = typename V::vi;
  const vi dm = rows.gather(at + 80);
  tile.d[b] = V::half_lo(dm);
  tile.dmin[b] = V::sub(V::zero(), V::half_hi(dm));
  vi s[4];
  V::transpose16(rows.row, at, s);  // scales[j] = sc_j | m_j << 4
  const vi nibble = V::iset1(0x0f);
  for (int j = 0; j < 16; ++j) tile.sc[b][j] = V::iand(V::srl32(s[j / 4], 8 * (j % 4)), nibble);
  for (int p = 0; p < 8; ++p) {
    const vi lo = V::iand(V::srl32(s[p / 2], 16 * (p % 2) + 4), nibble);
    const vi hi = V::iand(V::srl32(s[p / 2], 16 * (p % 2) + 12), nibble);
    tile.pair[b][p] = V::ior(lo, V::sll32(hi, 16));
  }
  decode_levels2<V>(tile, rows, b, at + 16, -1);
}

/// q3_k: d, the 6-bit scales (as sc - 32) and the levels (q + 4, 0..7) of super-block b
/// (110 bytes at `at`).
template <class V>
void decode_q3(tilek<V>& tile, const tile_rows<V>& rows, int b, std::int64_t at) {
  using vi = typename V::vi;
  rows.halves(at + 108, 0, 1, tile.d + b);
  // The 12 scale bytes as three dwords (a 16-byte load would pass the block's end).
  const vi s[3] = {rows.gather(at + 96), rows.gather(at + 100), rows.gather(at + 104)};
  const vi nibble = V::iset1(0x0f), two = V::iset1(3), low16 = V::iset1(0xffff);
  for (int j = 0; j < 16; ++j) {
    const vi low = V::iand(V::srl32(s[j % 8 / 4], 8 * (j % 4) + (j < 8 ? 0 : 4)), nibble);
    const vi high = V::iand(V::srl32(s[2], 8 * (j % 4) + 2 * (j / 4)), two);
    tile.sc[b][j] = V::iadd(V::ior(low, V::sll32(high, 4)), V::iset1(-32));
  }
  for (int p = 0; p < 8; ++p) {
    const vi lo = V::iand(V::mullo(tile.sc[b][2 * p], V::iset1(-4)), low16);
    tile.pair[b][p] = V::ior(lo, V::sll32(V::mullo(tile.sc[b][2 * p + 1], V::iset1(-4)), 16));
  }
  decode_levels2<V>(tile, rows, b, at + 32, at);
}

enum class k_type { q4_k, q5_k, q6_k, q2_k, q3_k };

constexpr int block_bytes_of(k_type k) {
  switch (k) {
    case k_type::q4_k: return 144;
    case k_type::q5_k: return 176;
    case k_type::q6_k: return 210;
    case k_type::q2_k: return 84;
    case k_type::q3_k: return 110;
  }
  return 0;
}

/// The types whose super-blocks carry mins (dmin * m_j, over the input's sums).
constexpr bool has_mins(k_type k) { return k == k_type::q4_k || k == k_type::q5_k || k == k_type::q2_k; }

template <class V, k_type K>
void decode_k(tilek<V>& tile, const tile_rows<V>& rows, int b0, int num_blocks, tile_prefetch<V>& prefetch) {
  constexpr int block_bytes = block_bytes_of(K);
  const int per_block = (prefetch.lines() + num_blocks - 1) / num_blocks;
  for (int b = 0; b < num_blocks; ++b) {
    prefetch.step(per_block);
    const std::int64_t at = std::int64_t(b0 + b) * block_bytes;
    if constexpr (K == k_type::q6_k) {
      decode_q6<V>(tile, rows, b, at);
    } else if constexpr (K == k_type::q2_k) {
      decode_q2<V>(tile, rows, b, at);
    } else if constexpr (K == k_type::q3_k) {
      decode_q3<V>(tile, rows, b, at);
    } else {
      decode_affine_scales<V>(tile, rows, b, at);
      decode_affine_levels<V>(tile, rows, b, at + (K == k_type::q4_k ? 16 : 48), K == k_type::q4_k ? -1 : at + 16);
    }
  }
}

template <class V, k_type K, int tokens>
void tokens_k(const tilek<V>& tile, const typed_gemm_args& a, int t, int b0, int num_blocks, float (*acc)[V::width]) {
  using vi = typename V::vi;
  constexpr int span = K == k_type::q4_k || K == k_type::q5_k ? 32 : 16;  // values per sub-block scale
  const std::int8_t* xq[tokens];
  const float* dx[tokens];
  const std::int16_t* bsum[tokens];
  typename V::vf f[tokens];
  for (int j = 0; j < tokens; ++j) {
    const std::byte* x = a.x + (t + j) * a.ldx;
    xq[j] = reinterpret_cast<const std::int8_t*>(x) + 256 * b0;
    dx[j] = reinterpret_cast<const float*>(x + prepared_scales_offset(a.k)) + b0;
    bsum[j] = reinterpret_cast<const std::int16_t*>(x + prepared_sums_offset(input_format::q8_k, a.k)) + 16 * b0;
    f[j] = V::load(acc[j]);
  }
  for (int b = 0; b < num_blocks; ++b) {
    vi isum[tokens], msum[tokens];
    for (int j = 0; j < tokens; ++j) isum[j] = V::izero(), msum[j] = V::izero();
    for (int sub = 0; sub < 256 / span; ++sub) {
      vi s[tokens];
      for (int j = 0; j < tokens; ++j) s[j] = V::izero();
      for (int g = 0; g < span / 4; ++g) {
        const vi w = tile.q[b][sub * span / 4 + g];
        for (int j = 0; j < tokens; ++j) s[j] = V::dot_u8s8(s[j], w, V::bcast32(xq[j] + 256 * b + span * sub + 4 * g));
      }
      for (int j = 0; j < tokens; ++j) isum[j] = V::iadd(isum[j], V::mullo(s[j], tile.sc[b][sub]));
    }
    for (int p = 0; p < 8; ++p) {  // bsum pairs (2p, 2p + 1)
      for (int j = 0; j < tokens; ++j) {
        vi& target = has_mins(K) ? msum[j] : isum[j];
        target = V::dot_s16(target, tile.pair[b][p], V::bcast32(bsum[j] + 16 * b + 2 * p));
      }
    }
    for (int j = 0; j < tokens; ++j) {
      const auto scale = V::set1(dx[j][b]);
      f[j] = V::fmadd(V::cvt(isum[j]), V::mul(tile.d[b], scale), f[j]);
      if constexpr (has_mins(K)) f[j] = V::fmadd(V::cvt(msum[j]), V::mul(tile.dmin[b], scale), f[j]);
    }
  }
  for (int j = 0; j < tokens; ++j) V::store(acc[j], f[j]);
}

template <class V, k_type K>
void gemm_k(const typed_gemm_args& a, int row_begin, int row_end) {
  alignas(64) tilek<V> tile;
  alignas(64) float acc[quant_token_block][V::width];
  constexpr int group = V::width == 16 ? 4 : 2;
  constexpr int chunk = tilek<V>::chunk_blocks;
  constexpr int block_bytes = block_bytes_of(K);
  const int num_blocks = a.k / 256;
  tile_prefetch<V> prefetch;
  for (int o = row_begin; o < row_end; o += V::width) {
    const tile_rows<V> rows(a.w, o, row_end - o < V::width ? row_end - o : V::width);
    for (int t0 = 0; t0 < a.n; t0 += quant_token_block) {
      const int count = a.n - t0 < quant_token_block ? a.n - t0 : quant_token_block;
      for (int j = 0; j < count; ++j) V::store(acc[j], V::zero());
      for (int b0 = 0; b0 < num_blocks; b0 += chunk) {
        const int nb = num_blocks - b0 < chunk ? num_blocks - b0 : chunk;
        if (t0 + quant_token_block >= a.n) {
          prefetch.plan_next(a.w, o, row_end, b0, chunk, num_blocks, block_bytes);
        } else {
          prefetch.plan(a.w, o, o, 0, 0);
        }
        decode_k<V, K>(tile, rows, b0, nb, prefetch);
        int j = 0;
        for (; j + group <= count; j += group) tokens_k<V, K, group>(tile, a, t0 + j, b0, nb, acc + j);
        for (; j < count; ++j) tokens_k<V, K, 1>(tile, a, t0 + j, b0, nb, acc + j);
      }
      store_tile<V>(a, t0, count, o, rows.count, acc);
    }
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu
