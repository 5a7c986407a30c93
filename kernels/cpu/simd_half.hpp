#pragma once
// Products over f16 weights (f32 inputs) and bf16 weights (bf16 inputs) as templates
// over the vector traits: the f32 kernel's 4-row micro-tiles (simd_f32.hpp) with the
// weights (and bf16 inputs) widened to floats as they are loaded. Internal linkage.
#include "kernels/cpu/simd_f32.hpp"

namespace inflight::kernels::cpu {
namespace {

/// f16 weights, f32 inputs.
template <class V>
struct f16_loads {
  static typename V::vf w(const std::byte* row, int i) { return V::load_f16(row + 2 * i); }
  static typename V::vf x(const std::byte* row, int i) { return V::load(reinterpret_cast<const float*>(row) + i); }
  static typename V::vf w_tail(const std::byte* row, int i, int count) {
    alignas(64) std::uint16_t tmp[V::width] = {};
    __builtin_memcpy(tmp, row + 2 * i, std::size_t(count) * 2);
    return V::load_f16(tmp);
  }
  static typename V::vf x_tail(const std::byte* row, int i, int count) {
    return V::maskz_load(V::first_lanes(count), reinterpret_cast<const float*>(row) + i);
  }
};

/// bf16 weights and inputs, widened to floats.
template <class V>
struct bf16_loads {
  static typename V::vf w(const std::byte* row, int i) { return V::load_bf16(row + 2 * i); }
  static typename V::vf x(const std::byte* row, int i) { return V::load_bf16(row + 2 * i); }
  static typename V::vf w_tail(const std::byte* row, int i, int count) {
    alignas(64) std::uint16_t tmp[V::width] = {};
    __builtin_memcpy(tmp, row + 2 * i, std::size_t(count) * 2);
    return V::load_bf16(tmp);
  }
  static typename V::vf x_tail(const std::byte* row, int i, int count) { return w_tail(row, i, count); }
};

template <class V, class L, int tokens>
void half_micro_tile(const std::byte* const* w, const typed_gemm_args& a, int t, float* y, int rows) {
  typename V::vf acc[f32_tile_rows][tokens];
  for (int r = 0; r < f32_tile_rows; ++r) {
    for (int j = 0; j < tokens; ++j) acc[r][j] = V::zero();
  }
  const std::byte* x = a.x + t * a.ldx;
  int i = 0;
  for (; i + V::width <= a.k; i += V::width) {
    typename V::vf wv[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) wv[r] = L::w(w[r], i);
    for (int j = 0; j < tokens; ++j) {
      const auto xv = L::x(x + j * a.ldx, i);
      for (int r = 0; r < f32_tile_rows; ++r) acc[r][j] = V::fmadd(wv[r], xv, acc[r][j]);
    }
  }
  if (i < a.k) {  // the tail loads as zeros past k
    typename V::vf wv[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) wv[r] = L::w_tail(w[r], i, a.k - i);
    for (int j = 0; j < tokens; ++j) {
      const auto xv = L::x_tail(x + j * a.ldx, i, a.k - i);
      for (int r = 0; r < f32_tile_rows; ++r) acc[r][j] = V::fmadd(wv[r], xv, acc[r][j]);
    }
  }
  for (int j = 0; j < tokens; ++j) {
    __m128 s = V::reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
    float* yj = y + (t + j) * a.ldy;
    if (a.accumulate) s = _mm_add_ps(V::load4(yj, rows), s);
    V::store4(yj, rows, s);
  }
}

template <class V, class L>
void half_gemm(const typed_gemm_args& a, int row_begin, int row_end) {
  constexpr int tile = V::max_tile_tokens < 4 ? V::max_tile_tokens : 4;
  for (int o = row_begin; o < row_end; o += f32_tile_rows) {
    const int rows = row_end - o < f32_tile_rows ? row_end - o : f32_tile_rows;
    const std::byte* w[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) w[r] = a.w.data + (o + (r < rows ? r : rows - 1)) * a.w.row_bytes;
    int t = 0;
    for (; t + tile <= a.n; t += tile) half_micro_tile<V, L, tile>(w, a, t, a.y + o, rows);
    for (; t < a.n; ++t) half_micro_tile<V, L, 1>(w, a, t, a.y + o, rows);
  }
}

}  // namespace
}  // namespace inflight::kernels::cpu
