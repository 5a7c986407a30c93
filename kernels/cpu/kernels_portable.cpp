// The kernel table for any x86-64 (or other) CPU: plain C++ that the compiler
// vectorizes for the baseline instruction set. Same structure as the AVX2 / AVX-512
// tables (8 partial sums per dot product), so every ISA is batch-invariant the same way.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {
namespace {

constexpr int lanes = 8;

float dot(const float* a, const float* b, int k) {
  float s[lanes] = {};
  int i = 0;
  for (; i + lanes <= k; i += lanes) {
    for (int l = 0; l < lanes; ++l) s[l] += a[i + l] * b[i + l];
  }
  for (int l = 0; i + l < k; ++l) s[l] += a[i + l] * b[i + l];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

void gemm(const gemm_args& a, int row_begin, int row_end) {
  for (int t = 0; t < a.n; ++t) {
    const float* x = a.x + t * a.ldx;
    float* y = a.y + t * a.ldy;
    for (int o = row_begin; o < row_end; ++o) {
      const float d = dot(x, a.w + o * a.ldw, a.k);
      y[o] = a.accumulate ? y[o] + d : d;
    }
  }
}

/// Key or value row of position p.
const float* row_at(const attention_args& a, const float* cache, int p) {
  const std::int64_t slot = std::int64_t(a.block_table[p / a.block_size]) * a.block_size + p % a.block_size;
  return cache + slot * a.kv_dim + a.head_offset;
}

void attention(const attention_args& a) {
  float max_score = -INFINITY;
  for (int p = 0; p < a.num_keys; ++p) {
    a.scores[p] = dot(a.q, row_at(a, a.k_cache, p), a.head_dim) * a.scale;
    max_score = std::max(max_score, a.scores[p]);
  }
  float sum = 0.0f;
  for (int p = 0; p < a.num_keys; ++p) {
    a.scores[p] = std::exp(a.scores[p] - max_score);
    sum += a.scores[p];
  }
  const float inv_sum = 1.0f / sum;
  std::fill_n(a.out, a.head_dim, 0.0f);
  for (int p = 0; p < a.num_keys; ++p) {
    const float* v = row_at(a, a.v_cache, p);
    const float weight = a.scores[p] * inv_sum;
    for (int i = 0; i < a.head_dim; ++i) a.out[i] += weight * v[i];
  }
}

void rmsnorm_row(float* out, const float* x, const float* w, int dim, float eps) {
  const float ss = dot(x, x, dim);
  const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
  for (int i = 0; i < dim; ++i) out[i] = w[i] * (scale * x[i]);
}

void silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

constexpr cpu_kernel_table table{cpu_isa::portable, gemm, attention, rmsnorm_row, silu_mul};

}  // namespace

const cpu_kernel_table& portable_kernels() { return table; }

}  // namespace inflight::kernels::cpu
