#pragma once
// The f32 kernels (gemm, attention, RMSNorm, SiLU) as templates over the vector traits
// of simd_avx2.hpp / simd_avx512.hpp, included only by the files compiled for those
// instruction sets. Internal linkage throughout (see those headers).
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int f32_tile_rows = 4;  // weight rows per micro-tile

/// y[j][0..rows) (+)= w[0..rows) . x[j] for j < tokens: rows <= 4 weight rows (missing
/// ones repeat the last) against `tokens` input rows, the whole of k.
template <class V, int tokens>
void f32_micro_tile(const float* const* w, const float* x, std::int64_t ldx, float* y, std::int64_t ldy, int k,
                    int rows, bool accumulate) {
  typename V::vf acc[f32_tile_rows][tokens];
  for (int r = 0; r < f32_tile_rows; ++r) {
    for (int j = 0; j < tokens; ++j) acc[r][j] = V::zero();
  }
  int i = 0;
  for (; i + V::width <= k; i += V::width) {
    typename V::vf wv[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) wv[r] = V::load(w[r] + i);
    for (int j = 0; j < tokens; ++j) {
      const auto xv = V::load(x + j * ldx + i);
      for (int r = 0; r < f32_tile_rows; ++r) acc[r][j] = V::fmadd(wv[r], xv, acc[r][j]);
    }
  }
  if (i < k) {  // masked lanes load as zeros and add exactly nothing
    const auto m = V::first_lanes(k - i);
    typename V::vf wv[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) wv[r] = V::maskz_load(m, w[r] + i);
    for (int j = 0; j < tokens; ++j) {
      const auto xv = V::maskz_load(m, x + j * ldx + i);
      for (int r = 0; r < f32_tile_rows; ++r) acc[r][j] = V::fmadd(wv[r], xv, acc[r][j]);
    }
  }
  for (int j = 0; j < tokens; ++j) {
    __m128 s = V::reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
    float* yj = y + j * ldy;
    if (accumulate) s = _mm_add_ps(V::load4(yj, rows), s);
    V::store4(yj, rows, s);
  }
}

template <class V>
void f32_tile_tokens(const float* const* w, const gemm_args& a, int t, int count, float* y, int rows) {
  const float* x = a.x + t * a.ldx;
  float* yt = y + t * a.ldy;
  static_assert(V::max_tile_tokens <= 6);
  switch (count < V::max_tile_tokens ? count : V::max_tile_tokens) {
    case 1: return f32_micro_tile<V, 1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 2: return f32_micro_tile<V, 2>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 3: return f32_micro_tile<V, 3 <= V::max_tile_tokens ? 3 : 1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 4: return f32_micro_tile<V, 4 <= V::max_tile_tokens ? 4 : 1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 5: return f32_micro_tile<V, 5 <= V::max_tile_tokens ? 5 : 1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    default: return f32_micro_tile<V, 6 <= V::max_tile_tokens ? 6 : 1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
  }
}

template <class V>
void f32_gemm(const gemm_args& a, int row_begin, int row_end) {
  // Token blocks small enough that their inputs stay in L2 while each 4-row weight
  // tile is reused from L1 for every token of the block.
  constexpr int tile = V::max_tile_tokens;
  const int block_floats = 64 * 1024;
  int block = block_floats / (a.k > 0 ? a.k : 1) / tile * tile;
  if (block < tile) block = tile;
  for (int t0 = 0; t0 < a.n; t0 += block) {
    const int t1 = t0 + block < a.n ? t0 + block : a.n;
    for (int o = row_begin; o < row_end; o += f32_tile_rows) {
      const int rows = row_end - o < f32_tile_rows ? row_end - o : f32_tile_rows;
      const float* w[f32_tile_rows];
      for (int r = 0; r < f32_tile_rows; ++r) w[r] = a.w + (o + (r < rows ? r : rows - 1)) * a.ldw;
      for (int t = t0; t < t1; t += tile) f32_tile_tokens<V>(w, a, t, t1 - t < tile ? t1 - t : tile, a.y + o, rows);
    }
  }
}

/// The f32 product through the typed interface (the prepared input is the f32 rows).
template <class V>
void f32_typed_gemm(const typed_gemm_args& a, int row_begin, int row_end) {
  const gemm_args f{reinterpret_cast<const float*>(a.x), a.ldx / 4, reinterpret_cast<const float*>(a.w.data),
                    a.w.row_bytes / 4, a.y, a.ldy, a.n, a.k, a.accumulate};
  f32_gemm<V>(f, row_begin, row_end);
}

template <class V>
void f32_rmsnorm_row(float* out, const float* x, const float* w, int dim, float eps) {
  auto ss = V::zero();
  for (int i = 0; i < dim; i += V::width) {
    const auto v = V::maskz_load(V::first_lanes(dim - i), x + i);
    ss = V::fmadd(v, v, ss);
  }
  const auto scale = V::set1(1.0f / __builtin_sqrtf(V::reduce(ss) / float(dim) + eps));
  for (int i = 0; i < dim; i += V::width) {
    const auto m = V::first_lanes(dim - i);
    V::mask_store(out + i, m, V::mul(V::maskz_load(m, w + i), V::mul(scale, V::maskz_load(m, x + i))));
  }
}

template <class V>
void f32_silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; i += V::width) {
    const auto m = V::first_lanes(n - i);
    const auto g = V::maskz_load(m, gate + i);
    const auto silu = V::div(g, V::add(V::set1(1.0f), V::exp(V::sub(V::zero(), g))));
    V::mask_store(gate + i, m, V::mul(silu, V::maskz_load(m, up + i)));
  }
}

/// GELU's tanh approximation as x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the
/// same function as 0.5 x (1 + tanh u).
template <class V>
void f32_gelu_mul(float* gate, const float* up, int n) {
  constexpr float c1 = 1.5957691216057308f, c3 = c1 * 0.044715f;  // 2 sqrt(2/pi), times 0.044715
  for (int i = 0; i < n; i += V::width) {
    const auto m = V::first_lanes(n - i);
    const auto g = V::maskz_load(m, gate + i);
    const auto u = V::mul(g, V::fmadd(V::mul(g, g), V::set1(c3), V::set1(c1)));
    const auto gelu = V::div(g, V::add(V::set1(1.0f), V::exp(V::sub(V::zero(), u))));
    V::mask_store(gate + i, m, V::mul(gelu, V::maskz_load(m, up + i)));
  }
}

template <class V>
void f32_swiglu_oai_mul(float* gate, const float* up, int n) {
  const auto limit = V::set1(7.0f), neg_limit = V::set1(-7.0f), neg_alpha = V::set1(-1.702f), one = V::set1(1.0f);
  const auto min = [](typename V::vf a, typename V::vf b) { return V::sub(V::zero(), V::max(V::sub(V::zero(), a), V::sub(V::zero(), b))); };
  for (int i = 0; i < n; i += V::width) {
    const auto m = V::first_lanes(n - i);
    const auto g = min(V::maskz_load(m, gate + i), limit);
    const auto u = min(V::max(V::maskz_load(m, up + i), neg_limit), limit);
    const auto glu = V::div(g, V::add(one, V::exp(V::mul(g, neg_alpha))));
    V::mask_store(gate + i, m, V::mul(glu, V::add(u, one)));
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu
