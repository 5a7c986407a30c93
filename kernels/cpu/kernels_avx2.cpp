// The kernel table for CPUs with AVX2 and FMA (no AVX-512). Compiled for that
// instruction set (kernels/CMakeLists.txt) and reached only through avx2_kernels()
// after a CPU check: intrinsics and raw pointers only, no header with inline functions.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
// GCC 12's intrinsic headers initialize "undefined" registers from themselves.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace inflight::kernels::cpu {
namespace {

constexpr int width = 8;           // floats per register
constexpr int tile_rows = 4;       // weight rows per micro-tile
constexpr int max_tile_tokens = 2; // 4 x 2 accumulators + 4 weight + 1 input register of 16

__m256i first_lanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
__m128i first_lanes4(int count) { return _mm_cmpgt_epi32(_mm_set1_epi32(count), _mm_setr_epi32(0, 1, 2, 3)); }

/// {sum(a), sum(b), sum(c), sum(d)}; each sum uses its own lanes only, in a fixed order.
__m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

float reduce(__m256 a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }

/// exp(x) to about 1 ulp: 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, p of degree 6.
__m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33f)), _mm256_set1_ps(88.37f));
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

template <int tokens>
void micro_tile(const float* const* w, const float* x, std::int64_t ldx, float* y, std::int64_t ldy, int k, int rows,
                bool accumulate) {
  __m256 acc[tile_rows][tokens];
  for (int r = 0; r < tile_rows; ++r) {
    for (int j = 0; j < tokens; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  int i = 0;
  for (; i + width <= k; i += width) {
    __m256 wv[tile_rows];
    for (int r = 0; r < tile_rows; ++r) wv[r] = _mm256_loadu_ps(w[r] + i);
    for (int j = 0; j < tokens; ++j) {
      const __m256 xv = _mm256_loadu_ps(x + j * ldx + i);
      for (int r = 0; r < tile_rows; ++r) acc[r][j] = _mm256_fmadd_ps(wv[r], xv, acc[r][j]);
    }
  }
  if (i < k) {  // masked lanes load as zeros and add exactly nothing
    const __m256i m = first_lanes(k - i);
    __m256 wv[tile_rows];
    for (int r = 0; r < tile_rows; ++r) wv[r] = _mm256_maskload_ps(w[r] + i, m);
    for (int j = 0; j < tokens; ++j) {
      const __m256 xv = _mm256_maskload_ps(x + j * ldx + i, m);
      for (int r = 0; r < tile_rows; ++r) acc[r][j] = _mm256_fmadd_ps(wv[r], xv, acc[r][j]);
    }
  }
  const __m128i out_mask = first_lanes4(rows);
  for (int j = 0; j < tokens; ++j) {
    __m128 s = reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
    float* yj = y + j * ldy;
    if (accumulate) s = _mm_add_ps(_mm_maskload_ps(yj, out_mask), s);
    _mm_maskstore_ps(yj, out_mask, s);
  }
}

void gemm(const gemm_args& a, int row_begin, int row_end) {
  const int block_floats = 64 * 1024;  // inputs of a token block stay in L2
  int block = block_floats / (a.k > 0 ? a.k : 1) / max_tile_tokens * max_tile_tokens;
  if (block < max_tile_tokens) block = max_tile_tokens;
  for (int t0 = 0; t0 < a.n; t0 += block) {
    const int t1 = t0 + block < a.n ? t0 + block : a.n;
    for (int o = row_begin; o < row_end; o += tile_rows) {
      const int rows = row_end - o < tile_rows ? row_end - o : tile_rows;
      const float* w[tile_rows];
      for (int r = 0; r < tile_rows; ++r) w[r] = a.w + (o + (r < rows ? r : rows - 1)) * a.ldw;
      int t = t0;
      for (; t + 2 <= t1; t += 2) micro_tile<2>(w, a.x + t * a.ldx, a.ldx, a.y + t * a.ldy + o, a.ldy, a.k, rows, a.accumulate);
      if (t < t1) micro_tile<1>(w, a.x + t * a.ldx, a.ldx, a.y + t * a.ldy + o, a.ldy, a.k, rows, a.accumulate);
    }
  }
}

__m128 dot4(const float* q, const float* const* keys, int head_dim) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int i = 0;
  for (; i + width <= head_dim; i += width) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(keys[j] + i), acc[j]);
  }
  if (i < head_dim) {
    const __m256i m = first_lanes(head_dim - i);
    const __m256 qv = _mm256_maskload_ps(q + i, m);
    for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(qv, _mm256_maskload_ps(keys[j] + i, m), acc[j]);
  }
  return reduce4(acc[0], acc[1], acc[2], acc[3]);
}

/// Row `j` of the block holding key position `first` (a multiple of the block size).
const float* block_rows(const attention_args& a, const float* cache, int first) {
  const std::int64_t block = a.block_table[first / a.block_size];
  return cache + block * a.block_size * a.kv_dim + a.head_offset;
}

float softmax_numerators(const attention_args& a) {
  float max_score = -3.0e38f;
  for (int first = 0; first < a.num_keys; first += a.block_size) {
    const float* rows = block_rows(a, a.k_cache, first);
    const int in_block = a.num_keys - first < a.block_size ? a.num_keys - first : a.block_size;
    for (int j = 0; j < in_block; j += 4) {
      const int count = in_block - j < 4 ? in_block - j : 4;
      const float* keys[4];
      for (int i = 0; i < 4; ++i) keys[i] = rows + (j + (i < count ? i : count - 1)) * a.kv_dim;
      const __m128 s = _mm_mul_ps(dot4(a.q, keys, a.head_dim), _mm_set1_ps(a.scale));
      float* out = a.scores + first + j;
      _mm_maskstore_ps(out, first_lanes4(count), s);
      for (int i = 0; i < count; ++i) max_score = out[i] > max_score ? out[i] : max_score;
    }
  }
  const __m256 vmax = _mm256_set1_ps(max_score);
  __m256 sum = _mm256_setzero_ps();
  for (int p = 0; p < a.num_keys; p += width) {
    const __m256i m = first_lanes(a.num_keys - p);
    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(_mm256_maskload_ps(a.scores + p, m), vmax)), _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(a.scores + p, m, e);
    sum = _mm256_add_ps(sum, e);
  }
  return reduce(sum);
}

void attention(const attention_args& a) {
  const __m256 inv_sum = _mm256_set1_ps(1.0f / softmax_numerators(a));
  for (int c = 0; c < a.head_dim; c += 4 * width) {
    __m256i m[4];
    int active[4];
    __m256 acc[4];
    for (int j = 0; j < 4; ++j) {
      active[j] = a.head_dim - c - j * width > 0;
      m[j] = first_lanes(a.head_dim - c - j * width);
      acc[j] = _mm256_setzero_ps();
    }
    for (int first = 0; first < a.num_keys; first += a.block_size) {
      const float* rows = block_rows(a, a.v_cache, first) + c;
      const int in_block = a.num_keys - first < a.block_size ? a.num_keys - first : a.block_size;
      for (int p = 0; p < in_block; ++p) {
        const float* v = rows + p * a.kv_dim;
        const __m256 weight = _mm256_mul_ps(_mm256_set1_ps(a.scores[first + p]), inv_sum);
        for (int j = 0; j < 4; ++j) {
          if (active[j]) acc[j] = _mm256_fmadd_ps(weight, _mm256_maskload_ps(v + j * width, m[j]), acc[j]);
        }
      }
    }
    for (int j = 0; j < 4; ++j) {
      if (active[j]) _mm256_maskstore_ps(a.out + c + j * width, m[j], acc[j]);
    }
  }
}

void rmsnorm_row(float* out, const float* x, const float* w, int dim, float eps) {
  __m256 ss = _mm256_setzero_ps();
  for (int i = 0; i < dim; i += width) {
    const __m256 v = _mm256_maskload_ps(x + i, first_lanes(dim - i));
    ss = _mm256_fmadd_ps(v, v, ss);
  }
  const __m256 scale = _mm256_set1_ps(1.0f / __builtin_sqrtf(reduce(ss) / float(dim) + eps));
  for (int i = 0; i < dim; i += width) {
    const __m256i m = first_lanes(dim - i);
    const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(w + i, m), _mm256_mul_ps(scale, _mm256_maskload_ps(x + i, m)));
    _mm256_maskstore_ps(out + i, m, v);
  }
}

void silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; i += width) {
    const __m256i m = first_lanes(n - i);
    const __m256 g = _mm256_maskload_ps(gate + i, m);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(silu, _mm256_maskload_ps(up + i, m)));
  }
}

constexpr cpu_kernel_table table{cpu_isa::avx2, gemm, attention, rmsnorm_row, silu_mul};

}  // namespace

const cpu_kernel_table& avx2_kernels() { return table; }

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx2_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
