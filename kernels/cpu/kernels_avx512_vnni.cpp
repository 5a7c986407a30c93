// The kernel table for CPUs with AVX-512 VNNI and BF16 on top of the avx512 table:
// integer dot products (vpdpbusd) for the quantized types and bf16 ones (vdpbf16ps).
// The f32 kernels are the avx512 table's own, so f32 results are the same bits.
// Compiled for that instruction set and reached only after a CPU check.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512_vnni.hpp"
#include "kernels/cpu/simd_half.hpp"
#include "kernels/cpu/simd_gemv_k.hpp"
#include "kernels/cpu/simd_table.hpp"

namespace inflight::kernels::cpu {
namespace {

/// bf16 weights x bf16 inputs with vdpbf16ps: 32 products per instruction, in pairs.
template <int tokens>
void bf16_dot_tile(const std::byte* const* w, const typed_gemm_args& a, int t, float* y, int rows) {
  __m512 acc[f32_tile_rows][tokens];
  for (int r = 0; r < f32_tile_rows; ++r) {
    for (int j = 0; j < tokens; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const std::byte* x = a.x + t * a.ldx;
  for (int i = 0; i < a.k; i += 32) {
    const __mmask32 m = a.k - i >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << (a.k - i)) - 1u);
    __m512bh wv[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(m, w[r] + 2 * i);
    for (int j = 0; j < tokens; ++j) {
      const __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(m, x + j * a.ldx + 2 * i);
      for (int r = 0; r < f32_tile_rows; ++r) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], wv[r], xv);
    }
  }
  for (int j = 0; j < tokens; ++j) {
    __m128 s = avx512_traits::reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
    float* yj = y + (t + j) * a.ldy;
    if (a.accumulate) s = _mm_add_ps(avx512_traits::load4(yj, rows), s);
    avx512_traits::store4(yj, rows, s);
  }
}

void bf16_dot_gemm(const typed_gemm_args& a, int row_begin, int row_end) {
  for (int o = row_begin; o < row_end; o += f32_tile_rows) {
    const int rows = row_end - o < f32_tile_rows ? row_end - o : f32_tile_rows;
    const std::byte* w[f32_tile_rows];
    for (int r = 0; r < f32_tile_rows; ++r) w[r] = a.w.data + (o + (r < rows ? r : rows - 1)) * a.w.row_bytes;
    int t = 0;
    for (; t + 4 <= a.n; t += 4) bf16_dot_tile<4>(w, a, t, a.y + o, rows);
    for (; t < a.n; ++t) bf16_dot_tile<1>(w, a, t, a.y + o, rows);
  }
}

}  // namespace

const cpu_kernel_table& avx512_vnni_kernels() {
  using V = avx512_vnni_traits;
  static const cpu_kernel_table table = [] {
    cpu_kernel_table t = avx512_kernels();  // f32 kernels and input preparation: the same bits
    t.isa = cpu_isa::avx512_vnni;
    t.weights[int(weight_type::bf16)].gemm = bf16_dot_gemm;
    set_block_gemms<V>(t, []<k_type K> { return gemm_k_by_tokens<V, K>; });
    return t;
  }();
  return table;
}

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx512_vnni_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
