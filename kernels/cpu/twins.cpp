#include "kernels/cpu/twins.hpp"

#include <cmath>

#include "kernels/cpu/llama.hpp"

namespace inflight::kernels::cpu {

void add_rmsnorm(float* out, float* x, const float* delta, const float* w, const std::int32_t* rows, int n, int dim,
                 float eps, bool write_back) {
  for (int i = 0; i < n; ++i) {
    const std::int64_t r = rows != nullptr ? rows[i] : i;
    float* xr = x + r * dim;
    float* o = out + std::int64_t(i) * dim;
    float ss = 0.0f;
    for (int c = 0; c < dim; ++c) {
      const float v = xr[c] + (delta != nullptr ? delta[r * dim + c] : 0.0f);
      o[c] = v;  // the sum, until the scale is known
      ss += v * v;
    }
    const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
    for (int c = 0; c < dim; ++c) {
      if (write_back) xr[c] = o[c];
      o[c] = w[c] * (scale * o[c]);
    }
  }
}

void add_bias(float* y, const float* bias, int n, int width, int row_stride) {
  for (int t = 0; t < n; ++t) {
    for (int c = 0; c < width; ++c) y[std::int64_t(t) * row_stride + c] += bias[c];
  }
}

void silu_mul_fused(float* out, const float* gate_up, int n, int hidden) {
  for (int t = 0; t < n; ++t) {
    const float* g = gate_up + std::int64_t(t) * 2 * hidden;
    for (int i = 0; i < hidden; ++i) out[std::int64_t(t) * hidden + i] = g[i] / (1.0f + std::exp(-g[i])) * g[hidden + i];
  }
}

void qk_norm(float* qkv, int row_stride, const float* q_norm, const float* k_norm, int n, int num_heads,
             int num_kv_heads, int head_dim, float eps) {
  for (int t = 0; t < n; ++t) {
    float* q = qkv + std::int64_t(t) * row_stride;
    rmsnorm(q, q, q_norm, num_heads, head_dim, eps);
    float* k = q + std::int64_t(num_heads) * head_dim;
    rmsnorm(k, k, k_norm, num_kv_heads, head_dim, eps);
  }
}

void greedy_rows(const float* logits, int n, int vocab, std::int32_t* tokens, float* logprobs) {
  for (int r = 0; r < n; ++r) {
    const float* row = logits + std::int64_t(r) * vocab;
    int best = 0;
    for (int i = 1; i < vocab; ++i) {
      if (row[i] > row[best]) best = i;
    }
    double sum = 0.0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(double(row[i]) - double(row[best]));
    tokens[r] = best;
    logprobs[r] = float(-std::log(sum));
  }
}

}  // namespace inflight::kernels::cpu
