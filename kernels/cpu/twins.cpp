#include "kernels/cpu/twins.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

void decode_attention_split(float* out, const float* q, const float* k_cache, const float* v_cache,
                            const std::int32_t* positions, const std::int32_t* query_start,
                            const std::int32_t* block_tables, int block_table_stride, int num_seqs, int block_size,
                            int num_heads, int num_kv_heads, int head_dim, int split_size) {
  const int group = num_heads / num_kv_heads;
  const std::int64_t kv_dim = std::int64_t(num_kv_heads) * head_dim;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> split_max, split_sum, split_out;
  std::vector<float> acc(std::size_t(head_dim), 0.0f);
  for (int s = 0; s < num_seqs; ++s) {
    const int t = query_start[s], ctx = positions[t] + 1;
    const int num_splits = (ctx + split_size - 1) / split_size;
    const std::int32_t* table = block_tables + std::int64_t(s) * block_table_stride;
    auto row = [&](const float* cache, int key, int kvh) {
      const std::int64_t slot = std::int64_t(table[key / block_size]) * block_size + key % block_size;
      return cache + slot * kv_dim + std::int64_t(kvh) * head_dim;
    };
    for (int h = 0; h < num_heads; ++h) {
      const int kvh = h / group;
      const float* qh = q + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      split_max.assign(std::size_t(num_splits), 0.0f);
      split_sum.assign(std::size_t(num_splits), 0.0f);
      split_out.assign(std::size_t(num_splits) * std::size_t(head_dim), 0.0f);
      for (int sp = 0; sp < num_splits; ++sp) {
        const int begin = sp * split_size, end = std::min(ctx, begin + split_size);
        float m = -INFINITY, l = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int base = begin; base < end; base += 32) {  // a warp's 32 keys: one rescale each
          const int stop = std::min(end, base + 32);
          float scores[32];
          float piece_max = -INFINITY;
          for (int key = base; key < stop; ++key) {
            const float* k = row(k_cache, key, kvh);
            float dot = 0.0f;
            for (int d = 0; d < head_dim; ++d) dot += qh[d] * scale * k[d];
            scores[key - base] = dot;
            piece_max = std::max(piece_max, dot);
          }
          const float m_new = std::max(m, piece_max);
          const float corr = std::exp(m - m_new);
          l *= corr;
          for (auto& a : acc) a *= corr;
          for (int key = base; key < stop; ++key) {
            const float p = std::exp(scores[key - base] - m_new);
            l += p;
            const float* v = row(v_cache, key, kvh);
            for (int d = 0; d < head_dim; ++d) acc[std::size_t(d)] += p * v[d];
          }
          m = m_new;
        }
        split_max[std::size_t(sp)] = m;
        split_sum[std::size_t(sp)] = l;
        std::copy(acc.begin(), acc.end(), split_out.begin() + std::int64_t(sp) * head_dim);
      }
      // The merge: every used split rescaled to the largest max.
      const float top = *std::max_element(split_max.begin(), split_max.end());
      float total = 0.0f;
      for (int sp = 0; sp < num_splits; ++sp) total += split_sum[std::size_t(sp)] * std::exp(split_max[std::size_t(sp)] - top);
      float* o = out + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) {
        float v = 0.0f;
        for (int sp = 0; sp < num_splits; ++sp) {
          v += split_out[std::size_t(sp) * std::size_t(head_dim) + std::size_t(d)] * std::exp(split_max[std::size_t(sp)] - top);
        }
        o[d] = v / total;
      }
    }
  }
}

}  // namespace inflight::kernels::cpu
