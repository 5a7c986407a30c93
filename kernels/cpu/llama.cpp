#include "kernels/cpu/llama.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace inflight::kernels::cpu {

void embedding_gather(float* out, const float* table, const std::int32_t* ids, int n, int dim) {
  for (int t = 0; t < n; ++t) std::copy_n(table + std::int64_t(ids[t]) * dim, dim, out + std::int64_t(t) * dim);
}

void embedding_gather(float* out, const weight_view& table, const std::int32_t* ids, int n, int dim,
                      const cpu_kernel_table& kernels) {
  const auto dequantize = kernels.weights[int(table.type)].dequantize_row;
  for (int t = 0; t < n; ++t) dequantize(table.data + ids[t] * table.row_bytes, dim, out + std::int64_t(t) * dim);
}

void rmsnorm(float* out, const float* x, const float* w, int n, int dim, float eps) {
  for (int t = 0; t < n; ++t) {
    const float* row = x + std::int64_t(t) * dim;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += row[i] * row[i];
    const float scale = 1.0f / std::sqrt(ss / float(dim) + eps);
    float* o = out + std::int64_t(t) * dim;
    for (int i = 0; i < dim; ++i) o[i] = w[i] * (scale * row[i]);
  }
}

void linear(float* y, const float* x, const float* w, const float* bias, int n, int in, int out) {
  float beta = 0.0f;
  if (bias != nullptr) {
    for (int t = 0; t < n; ++t) std::copy_n(bias, out, y + std::int64_t(t) * out);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, beta, y, out);
}

void linear(float* y, const float* x, const weight_view& w, const float* bias, int n, int in, int out,
            const cpu_kernel_table& kernels) {
  if (w.type == weight_type::f32) return linear(y, x, as_f32(w), bias, n, in, out);
  std::vector<float> dense(std::size_t(out) * in);
  for (int o = 0; o < out; ++o) {
    kernels.weights[int(w.type)].dequantize_row(w.data + o * w.row_bytes, in, dense.data() + std::size_t(o) * in);
  }
  linear(y, x, dense.data(), bias, n, in, out);
}

namespace {

/// Llama-3: long wavelengths are slowed by `factor`, short ones kept, the band between smoothed.
float llama3_freq(float freq, const llama_shape& s) {
  const float low_wavelen = float(s.rope_original_max_position) / s.rope_low_freq_factor;
  const float high_wavelen = float(s.rope_original_max_position) / s.rope_high_freq_factor;
  const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
  if (wavelen < high_wavelen) return freq;
  if (wavelen > low_wavelen) return freq / s.rope_factor;
  const float smooth = (float(s.rope_original_max_position) / wavelen - s.rope_low_freq_factor) /
                       (s.rope_high_freq_factor - s.rope_low_freq_factor);
  return (1.0f - smooth) * freq / s.rope_factor + smooth * freq;
}

/// The pair index at which a frequency turns `rotations` times over the original context.
float yarn_correction_pair(float rotations, const llama_shape& s) {
  return float(s.rotary_dims()) *
         std::log(float(s.rope_original_max_position) / (rotations * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(s.rope_theta));
}

/// YaRN: pairs below the band (many rotations over the original context) keep their
/// frequency, pairs above it are interpolated (divided by `factor`), a linear ramp between.
float yarn_freq(int pair, float freq, const llama_shape& s) {
  const float low = std::max(0.0f, std::floor(yarn_correction_pair(s.rope_beta_fast, s)));
  const float high = std::min(float(s.rotary_dims() - 1), std::ceil(yarn_correction_pair(s.rope_beta_slow, s)));
  const float ramp = std::clamp((float(pair) - low) / std::max(0.001f, high - low), 0.0f, 1.0f);
  const float keep = 1.0f - ramp;  // the share of the original frequency
  return freq / s.rope_factor * (1.0f - keep) + freq * keep;
}

}  // namespace

float rope_inv_freq(int pair, const llama_shape& s) {
  float freq = std::pow(s.rope_theta, -2.0f * float(pair) / float(s.rotary_dims()));
  if (s.rope_pair_factors != nullptr) freq /= s.rope_pair_factors[pair];
  switch (s.rope_scaling) {
    case rope_scaling_kind::none: return freq;
    case rope_scaling_kind::llama3: return llama3_freq(freq, s);
    case rope_scaling_kind::linear: return freq / s.rope_factor;
    case rope_scaling_kind::yarn: return yarn_freq(pair, freq, s);
  }
  return freq;
}

void rope_rotate_head(float* head, const float* cos_t, const float* sin_t, const llama_shape& s) {
  const int half = s.rope_pairs();
  for (int j = 0; j < half; ++j) {
    const int a = s.rope_interleaved ? 2 * j : j;
    const int b = s.rope_interleaved ? 2 * j + 1 : j + half;
    const float x0 = head[a], x1 = head[b];
    head[a] = x0 * cos_t[j] - x1 * sin_t[j];
    head[b] = x0 * sin_t[j] + x1 * cos_t[j];
  }
}

void rope(float* q, float* k, const std::int32_t* positions, int n, const llama_shape& s) {
  const int half = s.rope_pairs();
  std::vector<float> inv_freq(half), cos_t(half), sin_t(half);
  for (int j = 0; j < half; ++j) inv_freq[j] = rope_inv_freq(j, s);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < half; ++j) {
      const float angle = float(positions[t]) * inv_freq[j];
      cos_t[j] = std::cos(angle) * s.rope_mscale;
      sin_t[j] = std::sin(angle) * s.rope_mscale;
    }
    for (int h = 0; h < s.num_heads; ++h) {
      rope_rotate_head(q + (std::int64_t(t) * s.num_heads + h) * s.head_dim, cos_t.data(), sin_t.data(), s);
    }
    for (int h = 0; h < s.num_kv_heads; ++h) {
      rope_rotate_head(k + (std::int64_t(t) * s.num_kv_heads + h) * s.head_dim, cos_t.data(), sin_t.data(), s);
    }
  }
}

void route_experts(const float* logits, int n, int num_experts, int k, bool sigmoid, bool normalize,
                   std::int32_t* experts, float* gates) {
  std::vector<float> p(static_cast<std::size_t>(num_experts));
  std::vector<std::int32_t> order(static_cast<std::size_t>(num_experts));
  for (int t = 0; t < n; ++t) {
    const float* row = logits + std::int64_t(t) * num_experts;
    if (sigmoid) {
      for (int e = 0; e < num_experts; ++e) p[e] = 1.0f / (1.0f + std::exp(-row[e]));
    } else {
      const float top = *std::max_element(row, row + num_experts);
      float sum = 0.0f;
      for (int e = 0; e < num_experts; ++e) sum += p[e] = std::exp(row[e] - top);
      for (int e = 0; e < num_experts; ++e) p[e] /= sum;
    }
    for (int e = 0; e < num_experts; ++e) order[e] = e;
    // The k best, ties to the lower expert (as a stable sort would).
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](std::int32_t a, std::int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float chosen = 0.0f;
    for (int j = 0; j < k; ++j) chosen += p[order[j]];
    for (int j = 0; j < k; ++j) {
      experts[std::int64_t(t) * k + j] = order[j];
      gates[std::int64_t(t) * k + j] = normalize ? p[order[j]] / chosen : p[order[j]];
    }
  }
}

void classifier_rows(float* out, const float* normed, const float* classifier, const std::int32_t* positions,
                     const std::int32_t* row_ids, int n, int dim) {
  for (int k = 0; k < n; ++k) {
    const float* h = normed + std::int64_t(positions[k]) * dim;
    const float* w = classifier + std::int64_t(row_ids[k]) * dim;
    float dot = 0.0f;
    for (int i = 0; i < dim; ++i) dot += w[i] * h[i];
    out[k] = dot;
  }
}

void silu_mul(float* gate, const float* up, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

namespace {

/// Element i of a KV row of `type`, as a float.
float kv_element(const std::byte* row, kv_type type, std::int64_t i) {
  if (type == kv_type::f32) return reinterpret_cast<const float*>(row)[i];
  std::uint16_t h;
  std::memcpy(&h, row + 2 * i, sizeof(h));
  return type == kv_type::f16 ? fp16_to_float(h) : bf16_to_float(h);
}

void store_kv_row(std::byte* dst, kv_type type, const float* src, int n) {
  for (int i = 0; i < n; ++i) {
    if (type == kv_type::f32) {
      std::memcpy(dst + 4 * i, src + i, sizeof(float));
      continue;
    }
    const std::uint16_t h = type == kv_type::f16 ? float_to_fp16(src[i]) : float_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, sizeof(h));
  }
}

}  // namespace

void kv_write(float* k_cache, float* v_cache, const float* k, const float* v, const std::int32_t* slot_mapping,
              int n, int kv_dim) {
  kv_write(reinterpret_cast<std::byte*>(k_cache), reinterpret_cast<std::byte*>(v_cache), kv_type::f32, k, v,
           slot_mapping, n, kv_dim);
}

void kv_write(std::byte* k_cache, std::byte* v_cache, kv_type type, const float* k, const float* v,
              const std::int32_t* slot_mapping, int n, int kv_dim) {
  const std::int64_t row = std::int64_t(kv_dim) * element_bytes(type);
  for (int t = 0; t < n; ++t) {
    const std::int64_t slot = slot_mapping[t];
    store_kv_row(k_cache + slot * row, type, k + std::int64_t(t) * kv_dim, kv_dim);
    store_kv_row(v_cache + slot * row, type, v + std::int64_t(t) * kv_dim, kv_dim);
  }
}

void paged_attention(float* out, const float* q, const float* k_cache, const float* v_cache,
                     const ragged_batch_view& b, int block_size, int num_heads, int num_kv_heads, int head_dim) {
  paged_attention(out, q, reinterpret_cast<const std::byte*>(k_cache), reinterpret_cast<const std::byte*>(v_cache),
                  kv_type::f32, b, block_size, num_heads, num_kv_heads, head_dim);
}

void paged_attention(float* out, const float* q, const std::byte* k_cache, const std::byte* v_cache, kv_type type,
                     const ragged_batch_view& b, int block_size, int num_heads, int num_kv_heads, int head_dim) {
  std::vector<int> seq_of_token(b.num_tokens);
  for (int s = 0; s < b.num_seqs; ++s) {
    for (int t = b.query_start[s]; t < b.query_start[s + 1]; ++t) seq_of_token[t] = s;
  }
  const int group = num_heads / num_kv_heads;
  const int kv_dim = num_kv_heads * head_dim;
  const std::int64_t row_bytes = std::int64_t(kv_dim) * element_bytes(type);
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const std::int64_t work = std::int64_t(b.num_tokens) * num_heads;
  std::int64_t num_key_reads = 0;
  for (int t = 0; t < b.num_tokens; ++t) num_key_reads += b.positions[t] + 1;
  // Small steps stay on one thread: waking a team costs more than it saves.
#pragma omp parallel if (num_key_reads * num_heads * head_dim > (1 << 18))
  {
    std::vector<float> scores;
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t item = 0; item < work; ++item) {
      const int t = int(item / num_heads), h = int(item % num_heads);
      const int s = seq_of_token[t];
      const int num_keys = b.positions[t] + 1;  // causal: keys at positions 0..p
      const std::int32_t* table = b.block_tables + std::int64_t(s) * b.block_table_stride;
      const float* qh = q + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      const std::int64_t head_off = std::int64_t(h / group) * head_dim;
      auto slot_of = [&](int p) { return std::int64_t(table[p / block_size]) * block_size + p % block_size; };
      scores.resize(num_keys);
      float max_score = -INFINITY;
      for (int p = 0; p < num_keys; ++p) {
        const std::byte* kp = k_cache + slot_of(p) * row_bytes;
        float dot = 0.0f;
        for (int i = 0; i < head_dim; ++i) dot += qh[i] * kv_element(kp, type, head_off + i);
        scores[p] = dot * scale;
        max_score = std::max(max_score, scores[p]);
      }
      float sum = 0.0f;
      for (int p = 0; p < num_keys; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      float* oh = out + std::int64_t(t) * num_heads * head_dim + std::int64_t(h) * head_dim;
      std::fill_n(oh, head_dim, 0.0f);
      for (int p = 0; p < num_keys; ++p) {
        const std::byte* vp = v_cache + slot_of(p) * row_bytes;
        const float weight = scores[p] / sum;
        for (int i = 0; i < head_dim; ++i) oh[i] += weight * kv_element(vp, type, head_off + i);
      }
    }
  }
}

}  // namespace inflight::kernels::cpu
