// The kernel table for CPUs with AVX-512 (F, VL, DQ) and FMA. This file is compiled
// for that instruction set (kernels/CMakeLists.txt) and reached only through
// avx512_kernels() after a CPU check, so it includes no header with inline functions
// the linker could pick for code that runs everywhere: intrinsics and raw pointers only.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
// GCC 12's intrinsic headers initialize "undefined" registers from themselves.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace inflight::kernels::cpu {
namespace {

constexpr int width = 16;          // floats per register
constexpr int tile_rows = 4;       // weight rows per micro-tile
constexpr int max_tile_tokens = 6; // 4 x 6 accumulators + 4 weight + 1 input register of 32

__mmask16 first_lanes(int count) { return __mmask16((1u << count) - 1u); }

/// {sum(a), sum(b), sum(c), sum(d)}; each sum uses its own lanes only, in a fixed order.
__m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  const __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
  const __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
  const __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

float reduce(__m512 a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }

/// exp(x) to about 1 ulp: 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, p of degree 6.
__m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33f)), _mm512_set1_ps(88.72f));
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

/// y[j][0..rows) (+)= w[0..rows) . x[j] for j < tokens: rows <= 4 weight rows (missing
/// ones repeat the last) against `tokens` <= 6 input rows, the whole of k.
template <int tokens>
void micro_tile(const float* const* w, const float* x, std::int64_t ldx, float* y, std::int64_t ldy, int k, int rows,
                bool accumulate) {
  __m512 acc[tile_rows][tokens];
  for (int r = 0; r < tile_rows; ++r) {
    for (int j = 0; j < tokens; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  int i = 0;
  for (; i + width <= k; i += width) {
    __m512 wv[tile_rows];
    for (int r = 0; r < tile_rows; ++r) wv[r] = _mm512_loadu_ps(w[r] + i);
    for (int j = 0; j < tokens; ++j) {
      const __m512 xv = _mm512_loadu_ps(x + j * ldx + i);
      for (int r = 0; r < tile_rows; ++r) acc[r][j] = _mm512_fmadd_ps(wv[r], xv, acc[r][j]);
    }
  }
  if (i < k) {  // masked lanes load as zeros and add exactly nothing
    const __mmask16 m = first_lanes(k - i);
    __m512 wv[tile_rows];
    for (int r = 0; r < tile_rows; ++r) wv[r] = _mm512_maskz_loadu_ps(m, w[r] + i);
    for (int j = 0; j < tokens; ++j) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + j * ldx + i);
      for (int r = 0; r < tile_rows; ++r) acc[r][j] = _mm512_fmadd_ps(wv[r], xv, acc[r][j]);
    }
  }
  const __mmask8 out_mask = __mmask8((1u << rows) - 1u);
  for (int j = 0; j < tokens; ++j) {
    __m128 s = reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
    float* yj = y + j * ldy;
    if (accumulate) s = _mm_add_ps(_mm_maskz_loadu_ps(out_mask, yj), s);
    _mm_mask_storeu_ps(yj, out_mask, s);
  }
}

void tile_tokens(const float* const* w, const gemm_args& a, int t, int count, float* y, int rows) {
  const float* x = a.x + t * a.ldx;
  float* yt = y + t * a.ldy;
  switch (count) {
    case 1: return micro_tile<1>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 2: return micro_tile<2>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 3: return micro_tile<3>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 4: return micro_tile<4>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    case 5: return micro_tile<5>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
    default: return micro_tile<6>(w, x, a.ldx, yt, a.ldy, a.k, rows, a.accumulate);
  }
}

void gemm(const gemm_args& a, int row_begin, int row_end) {
  // Token blocks small enough that their inputs stay in L2 while each 4-row weight
  // tile is reused from L1 for every token of the block.
  const int block_floats = 64 * 1024;
  int block = block_floats / (a.k > 0 ? a.k : 1) / max_tile_tokens * max_tile_tokens;
  if (block < max_tile_tokens) block = max_tile_tokens;
  for (int t0 = 0; t0 < a.n; t0 += block) {
    const int t1 = t0 + block < a.n ? t0 + block : a.n;
    for (int o = row_begin; o < row_end; o += tile_rows) {
      const int rows = row_end - o < tile_rows ? row_end - o : tile_rows;
      const float* w[tile_rows];
      for (int r = 0; r < tile_rows; ++r) w[r] = a.w + (o + (r < rows ? r : rows - 1)) * a.ldw;
      for (int t = t0; t < t1; t += max_tile_tokens) {
        tile_tokens(w, a, t, t1 - t < max_tile_tokens ? t1 - t : max_tile_tokens, a.y + o, rows);
      }
    }
  }
}

/// Four dot products of q with key rows (missing keys repeat the last).
__m128 dot4(const float* q, const float* const* keys, int head_dim) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int i = 0;
  for (; i + width <= head_dim; i += width) {
    const __m512 qv = _mm512_loadu_ps(q + i);
    for (int j = 0; j < 4; ++j) acc[j] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(keys[j] + i), acc[j]);
  }
  if (i < head_dim) {
    const __mmask16 m = first_lanes(head_dim - i);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
    for (int j = 0; j < 4; ++j) acc[j] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, keys[j] + i), acc[j]);
  }
  return reduce4(acc[0], acc[1], acc[2], acc[3]);
}

/// Row `j` of the block holding key position `first` (a multiple of the block size).
const float* block_rows(const attention_args& a, const float* cache, int first) {
  const std::int64_t block = a.block_table[first / a.block_size];
  return cache + block * a.block_size * a.kv_dim + a.head_offset;
}

float softmax_numerators(const attention_args& a) {
  __m512 vmax = _mm512_set1_ps(-3.0e38f);
  for (int first = 0; first < a.num_keys; first += a.block_size) {
    const float* rows = block_rows(a, a.k_cache, first);
    const int in_block = a.num_keys - first < a.block_size ? a.num_keys - first : a.block_size;
    for (int j = 0; j < in_block; j += 4) {
      const int count = in_block - j < 4 ? in_block - j : 4;
      const float* keys[4];
      for (int i = 0; i < 4; ++i) keys[i] = rows + (j + (i < count ? i : count - 1)) * a.kv_dim;
      const __m128 s = _mm_mul_ps(dot4(a.q, keys, a.head_dim), _mm_set1_ps(a.scale));
      _mm_mask_storeu_ps(a.scores + first + j, __mmask8((1u << count) - 1u), s);
    }
  }
  int p = 0;
  for (; p + width <= a.num_keys; p += width) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(a.scores + p));
  if (p < a.num_keys) {
    const __mmask16 m = first_lanes(a.num_keys - p);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, a.scores + p));
  }
  const __m512 max_score = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512 sum = _mm512_setzero_ps();
  for (p = 0; p < a.num_keys; p += width) {
    const __mmask16 m = first_lanes(a.num_keys - p < width ? a.num_keys - p : width);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, a.scores + p), max_score)));
    _mm512_mask_storeu_ps(a.scores + p, m, e);
    sum = _mm512_add_ps(sum, e);
  }
  return reduce(sum);
}

void attention(const attention_args& a) {
  const __m512 inv_sum = _mm512_set1_ps(1.0f / softmax_numerators(a));
  for (int c = 0; c < a.head_dim; c += 4 * width) {
    __mmask16 m[4];
    __m512 acc[4];
    for (int j = 0; j < 4; ++j) {
      const int left = a.head_dim - c - j * width;
      m[j] = first_lanes(left >= width ? width : (left > 0 ? left : 0));
      acc[j] = _mm512_setzero_ps();
    }
    for (int first = 0; first < a.num_keys; first += a.block_size) {
      const float* rows = block_rows(a, a.v_cache, first) + c;
      const int in_block = a.num_keys - first < a.block_size ? a.num_keys - first : a.block_size;
      for (int p = 0; p < in_block; ++p) {
        const float* v = rows + p * a.kv_dim;
        const __m512 weight = _mm512_mul_ps(_mm512_set1_ps(a.scores[first + p]), inv_sum);
        for (int j = 0; j < 4; ++j) {
          if (m[j] != 0) acc[j] = _mm512_fmadd_ps(weight, _mm512_maskz_loadu_ps(m[j], v + j * width), acc[j]);
        }
      }
    }
    for (int j = 0; j < 4; ++j) _mm512_mask_storeu_ps(a.out + c + j * width, m[j], acc[j]);
  }
}

void rmsnorm_row(float* out, const float* x, const float* w, int dim, float eps) {
  __m512 ss = _mm512_setzero_ps();
  for (int i = 0; i < dim; i += width) {
    const __mmask16 m = first_lanes(dim - i < width ? dim - i : width);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    ss = _mm512_fmadd_ps(v, v, ss);
  }
  const __m512 scale = _mm512_set1_ps(1.0f / __builtin_sqrtf(reduce(ss) / float(dim) + eps));
  for (int i = 0; i < dim; i += width) {
    const __mmask16 m = first_lanes(dim - i < width ? dim - i : width);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_mul_ps(scale, _mm512_maskz_loadu_ps(m, x + i)));
    _mm512_mask_storeu_ps(out + i, m, v);
  }
}

void silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; i += width) {
    const __mmask16 m = first_lanes(n - i < width ? n - i : width);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

constexpr cpu_kernel_table table{cpu_isa::avx512, gemm, attention, rmsnorm_row, silu_mul};

}  // namespace

const cpu_kernel_table& avx512_kernels() { return table; }

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx512_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
