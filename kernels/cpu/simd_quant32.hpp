#pragma once
// Products over the 32-value block types (q8_0, q4_0) as templates over the vector
// traits. A tile of V::width weight rows is decoded once per chunk of blocks into
// registers whose lanes are the rows (transpose16), so each token's block sum lands
// in one lane per row: then every (row, token) runs the chain of quant_portable.cpp,
//   acc = fma(float(isum_b), dw_b * dx_b, acc)  over the blocks in order,
// whatever the number of tokens or the tile: the products are batch-invariant, and the
// same bits on every vector table (the block sums are exact integers).
//
//   weights (row-major blocks)          tile.q[b][g] (one register per 4 values)
//   row 0: | d q0..q31 | d q0..q31 |    lane p: values 4g..4g+3 of block b of row row_of_lane(p)
//   row 1: | d q0..q31 | ...         ->  tile.d[b]: the rows' scales, same lanes
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int quant_token_block = 128;  // tokens whose accumulators live in a buffer across chunks

template <class V>
struct tile32 {
  static constexpr int chunk_blocks = 32;  // 1024 values: 16 KB of decoded weights at 16 rows
  typename V::vi q[chunk_blocks][8];
  typename V::vf d[chunk_blocks];
};

/// The rows of one tile (missing rows repeat the last) and gather offsets in lane order.
template <class V>
struct tile_rows {
  const std::byte* row[V::width];
  typename V::vi offsets;  ///< lane p: row_of_lane(p) - row 0, in bytes
  int count = 0;

  tile_rows(const weight_view& w, int first, int rows) : count(rows) {
    int offs[V::width];
    for (int r = 0; r < V::width; ++r) row[r] = w.data + (first + (r < rows ? r : rows - 1)) * w.row_bytes;
    for (int p = 0; p < V::width; ++p) offs[p] = int(row[V::row_of_lane(p)] - row[0]);
    offsets = V::iload(offs);
  }
  /// The rows' dwords at `offset` of each row, in lane order.
  typename V::vi gather(std::int64_t offset) const { return V::gather32(row[0] + offset, offsets); }
  /// The halves at first + i * stride (i < count) of each row, as floats in lane order,
  /// through a buffer: cheaper than a gather per block.
  void halves(std::int64_t first, std::int64_t stride, int count, typename V::vf* out) const {
    const std::byte* r[V::width];
    for (int p = 0; p < V::width; ++p) r[p] = row[V::row_of_lane(p)] + first;
    for (int i = 0; i < count; ++i) {
      __m128i h[V::width / 8];
      for (int j = 0; j < V::width / 8; ++j) {
        std::uint16_t v[8];
        for (int l = 0; l < 8; ++l) __builtin_memcpy(&v[l], r[8 * j + l] + i * stride, 2);
        h[j] = _mm_setr_epi16(short(v[0]), short(v[1]), short(v[2]), short(v[3]), short(v[4]), short(v[5]),
                              short(v[6]), short(v[7]));
      }
      out[i] = V::halves8(h);
    }
  }
};

/// Prefetches of the weights a tile reads next, spread over the current tile's decoding:
/// a tile reads its rows 16 bytes at a time each, a pattern the hardware prefetchers do
/// not run ahead of, and a burst of prefetches would stall on the core's few miss buffers.
template <class V>
struct tile_prefetch {
  const std::byte* row[V::width] = {};
  int num_rows = 0, lines_per_row = 0;
  int row_index = 0, line = 0;  ///< the next line to ask for
  std::int64_t first = 0;

  /// The bytes [first, first + bytes) of rows [o, min(o + V::width, row_end)) of w.
  void plan(const weight_view& w, int o, int row_end, std::int64_t at, std::int64_t bytes) {
    num_rows = o >= row_end ? 0 : (row_end - o < V::width ? row_end - o : V::width);
    for (int r = 0; r < num_rows; ++r) row[r] = w.data + (o + r) * w.row_bytes + at;
    first = at;
    lines_per_row = int((bytes + 63) / 64);
    row_index = line = 0;
  }
  /// What follows the chunk [b0, b0 + chunk) of the tile at o: its next chunk, or the
  /// next tile's first.
  void plan_next(const weight_view& w, int o, int row_end, int b0, int chunk, int num_blocks, int block_bytes) {
    if (b0 + chunk < num_blocks) {
      const int nb = num_blocks - (b0 + chunk) < chunk ? num_blocks - (b0 + chunk) : chunk;
      plan(w, o, row_end, std::int64_t(b0 + chunk) * block_bytes, std::int64_t(nb) * block_bytes);
    } else {
      plan(w, o + V::width, row_end, 0, std::int64_t(num_blocks < chunk ? num_blocks : chunk) * block_bytes);
    }
  }
  /// The next `count` lines (row by row).
  void step(int count) {
    for (; count > 0 && row_index < num_rows; --count) {
      _mm_prefetch(reinterpret_cast<const char*>(row[row_index] + std::int64_t(line) * 64), _MM_HINT_T0);
      if (++line == lines_per_row) line = 0, ++row_index;
    }
  }
  int lines() const { return num_rows * lines_per_row; }
};

struct q4_0_format {
  static constexpr int block_bytes = 18;
  static constexpr int offset = 8;  // values are nibbles - 8
};

struct q5_0_format {
  static constexpr int block_bytes = 22;
  static constexpr int offset = 16;  // values are 5 bits - 16
};

struct q8_0_format {
  static constexpr int block_bytes = 34;
  static constexpr int offset = 128;  // with VNNI: values are stored as w + 128 (unsigned)
};

/// Bits first .. first + 3 of each lane's dword, moved to bit 4 of its bytes 0 .. 3:
/// the four nibbles' shifts (0, 7, 14, 21) never overlap, so one multiply spreads them.
template <class V>
typename V::vi fifth_bits(typename V::vi high, int first) {
  const auto nibble = V::iand(V::srl32(high, first), V::iset1(0xf));
  return V::sll32(V::iand(V::mullo(nibble, V::iset1(0x00204081)), V::iset1(0x01010101)), 4);
}

template <class V, class F>
void decode32(tile32<V>& tile, const tile_rows<V>& rows, int b0, int num_blocks, tile_prefetch<V>& prefetch) {
  using vi = typename V::vi;
  const vi low4 = V::iset1(0x0f0f0f0f);
  const int per_block = (prefetch.lines() + num_blocks - 1) / num_blocks;
  rows.halves(std::int64_t(b0) * F::block_bytes, F::block_bytes, num_blocks, tile.d);
  for (int b = 0; b < num_blocks; ++b) {
    prefetch.step(per_block);
    const std::int64_t at = std::int64_t(b0 + b) * F::block_bytes;
    vi raw[8];
    V::transpose16(rows.row, at + (F::block_bytes == 22 ? 6 : 2), raw);  // the nibbles (q8_0: the first 16 values)
    if constexpr (F::block_bytes == 18) {
      for (int g = 0; g < 4; ++g) {
        tile.q[b][g] = V::iand(raw[g], low4);
        tile.q[b][4 + g] = V::iand(V::srl32(raw[g], 4), low4);
      }
    } else if constexpr (F::block_bytes == 22) {
      const vi high = rows.gather(at + 2);  // bit j: the fifth bit of value j, a dword per lane
      for (int g = 0; g < 4; ++g) {
        tile.q[b][g] = V::ior(V::iand(raw[g], low4), fifth_bits<V>(high, 4 * g));
        tile.q[b][4 + g] = V::ior(V::iand(V::srl32(raw[g], 4), low4), fifth_bits<V>(high, 16 + 4 * g));
      }
    } else {
      V::transpose16(rows.row, at + 18, raw + 4);
      for (int g = 0; g < 8; ++g) tile.q[b][g] = V::has_vnni ? V::xor_bytes(raw[g], V::iset1(int(0x80808080u))) : raw[g];
    }
  }
}

/// acc[j] (one register of rows per token j) over `num_blocks` blocks from b0 for
/// `tokens` consecutive prepared inputs.
template <class V, class F, int tokens>
void tokens32(const tile32<V>& tile, const typed_gemm_args& a, int t, int b0, int num_blocks, float (*acc)[V::width]) {
  using vi = typename V::vi;
  const std::int8_t* xq[tokens];
  const float* dx[tokens];
  const int* sums[tokens];
  typename V::vf f[tokens];
  for (int j = 0; j < tokens; ++j) {
    const std::byte* x = a.x + (t + j) * a.ldx;
    xq[j] = reinterpret_cast<const std::int8_t*>(x) + 32 * b0;
    dx[j] = reinterpret_cast<const float*>(x + prepared_scales_offset(a.k)) + b0;
    sums[j] = reinterpret_cast<const int*>(x + prepared_sums_offset(input_format::q8_0, a.k)) + b0;
    f[j] = V::load(acc[j]);
  }
  constexpr bool is_signed = F::block_bytes == 34 && !V::has_vnni;  // q8_0 by the sign trick
  for (int b = 0; b < num_blocks; ++b) {
    vi s[tokens];
    for (int j = 0; j < tokens; ++j) s[j] = V::iset1(is_signed ? 0 : -F::offset * sums[j][b]);
    for (int g = 0; g < 8; ++g) {
      const vi w = tile.q[b][g];
      if constexpr (is_signed) {
        const vi u = V::abs_bytes(w);
        for (int j = 0; j < tokens; ++j) s[j] = V::dot_u8s8(s[j], u, V::sign_bytes(V::bcast32(xq[j] + 32 * b + 4 * g), w));
      } else {
        for (int j = 0; j < tokens; ++j) s[j] = V::dot_u8s8(s[j], w, V::bcast32(xq[j] + 32 * b + 4 * g));
      }
    }
    for (int j = 0; j < tokens; ++j) f[j] = V::fmadd(V::cvt(s[j]), V::mul(tile.d[b], V::set1(dx[j][b])), f[j]);
  }
  for (int j = 0; j < tokens; ++j) V::store(acc[j], f[j]);
}

template <class V, class F>
void tokens32_any(const tile32<V>& tile, const typed_gemm_args& a, int t, int count, int b0, int nb,
                  float (*acc)[V::width]) {
  constexpr int group = V::width == 16 ? 4 : 2;
  int j = 0;
  for (; j + group <= count; j += group) tokens32<V, F, group>(tile, a, t + j, b0, nb, acc + j);
  for (; j < count; ++j) tokens32<V, F, 1>(tile, a, t + j, b0, nb, acc + j);
}

/// y[t][o..o+rows) = (accumulate ? y : 0) + acc[t], lanes put back in row order.
template <class V>
void store_tile(const typed_gemm_args& a, int t0, int count, int o, int rows, float (*acc)[V::width]) {
  const auto m = V::first_lanes(rows);
  for (int j = 0; j < count; ++j) {
    float* y = a.y + (t0 + j) * a.ldy + o;
    auto v = V::to_row_order(V::load(acc[j]));
    if (a.accumulate) v = V::add(V::maskz_load(m, y), v);
    V::mask_store(y, m, v);
  }
}

template <class V, class F>
void gemm32(const typed_gemm_args& a, int row_begin, int row_end) {
  alignas(64) tile32<V> tile;
  alignas(64) float acc[quant_token_block][V::width];
  constexpr int chunk = tile32<V>::chunk_blocks;
  const int num_blocks = a.k / 32;
  tile_prefetch<V> prefetch;
  for (int o = row_begin; o < row_end; o += V::width) {
    const tile_rows<V> rows(a.w, o, row_end - o < V::width ? row_end - o : V::width);
    for (int t0 = 0; t0 < a.n; t0 += quant_token_block) {
      const int count = a.n - t0 < quant_token_block ? a.n - t0 : quant_token_block;
      for (int j = 0; j < count; ++j) V::store(acc[j], V::zero());
      for (int b0 = 0; b0 < num_blocks; b0 += chunk) {
        const int nb = num_blocks - b0 < chunk ? num_blocks - b0 : chunk;
        if (t0 + quant_token_block >= a.n) {
          prefetch.plan_next(a.w, o, row_end, b0, chunk, num_blocks, F::block_bytes);
        } else {
          prefetch.plan(a.w, o, o, 0, 0);  // another token block reads this tile again: nothing new
        }
        decode32<V, F>(tile, rows, b0, nb, prefetch);
        tokens32_any<V, F>(tile, a, t0, count, b0, nb, acc);
      }
      store_tile<V>(a, t0, count, o, rows.count, acc);
    }
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu
