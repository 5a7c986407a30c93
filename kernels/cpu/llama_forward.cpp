// The forward pass of a ragged batch as one OpenMP parallel region per step, with four
// barriers per layer:
//
//   [RMSNorm, Q/K/V, RoPE, K/V write, attention]  per KV head group
//   [x += attn Wo]                                 per chunk of rows
//   [RMSNorm, gate and up, SiLU]                   per chunk of hidden rows
//   [x += h W_down]                                per chunk of rows
//
// Each thread normalizes every row into its own buffer (cheap next to the GEMMs) rather
// than waiting at a barrier for a shared copy, and a KV head's projections and its
// query heads' attention stay in one chunk, so they need no barrier between them.
// Chunks are taken dynamically: a thread the OS runs late does not hold the others up.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "kernels/cpu/llama.hpp"

namespace inflight::kernels::cpu {

const char* to_string(forward_stage stage) {
  static constexpr const char* names[] = {"embed",   "norm", "qkv_rope", "attention",   "attn_out",
                                          "gate_up", "down", "logits",   "barrier_wait"};
  return names[int(stage)];
}

namespace {

using clock_type = std::chrono::steady_clock;

void grow(std::vector<float>& v, std::int64_t n) {
  if (std::int64_t(v.size()) < n) v.resize(std::size_t(n));
}

/// Everything one step reads, shared by the team.
struct step_context {
  const llama_shape& s;
  const llama_weights_view& w;
  const paged_kv_view& kv;
  const ragged_batch_view& b;
  llama_workspace& ws;
  const cpu_kernel_table& k;
  float* logits;
  int max_keys;

  /// This thread's normalized copy of the rows [num_tokens x dim].
  float* xb() const { return ws.xb.data() + std::int64_t(omp_get_thread_num()) * b.num_tokens * s.dim; }
};

/// Time of the team's first thread, charged to stages as it goes.
class stage_clock {
 public:
  explicit stage_clock(stage_times* times) : times_(omp_get_thread_num() == 0 ? times : nullptr) {
    if (times_ != nullptr) last_ = clock_type::now();
  }
  void mark(forward_stage stage) {
    if (times_ == nullptr) return;
    const auto now = clock_type::now();
    times_->seconds[int(stage)] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  /// The barrier that ends a stage.
  void barrier() {
#pragma omp barrier
    mark(forward_stage::barrier_wait);
  }

 private:
  stage_times* times_;
  clock_type::time_point last_;
};

/// Calls f(begin, end) for chunks of `chunk` rows of [0, rows), spread over the team
/// (no barrier at the end).
template <class F>
void for_chunks(int rows, int chunk, F&& f) {
  const int num_chunks = (rows + chunk - 1) / chunk;
#pragma omp for schedule(dynamic, 1) nowait
  for (int c = 0; c < num_chunks; ++c) f(c * chunk, std::min(rows, (c + 1) * chunk));
}

/// Rows per chunk of a linear layer: a few chunks per thread for balance, whole micro-tiles.
int chunk_rows(int rows) {
  const int per_chunk = rows / (8 * std::max(1, omp_get_num_threads()));
  return std::clamp((per_chunk + 3) / 4 * 4, 16, 256);
}

gemm_args linear_args(const float* x, int in, const float* w, float* y, int out, int n, bool accumulate) {
  return {x, in, w, in, y, out, n, in, accumulate};
}

/// Every row of x, normalized into `out` (each thread its own copy).
void normalize_rows(const step_context& c, const float* norm_w, float* out) {
  const int d = c.s.dim;
  for (int t = 0; t < c.b.num_tokens; ++t) {
    c.k.rmsnorm_row(out + std::int64_t(t) * d, c.ws.x.data() + std::int64_t(t) * d, norm_w, d, c.s.norm_eps);
  }
}

enum class projection { q, k, v };

/// One head of Q, K or V for every token: its rows of the projection, the bias, RoPE
/// for Q and K, and the write of K and V into the paged cache.
void project_head(const step_context& c, const llama_layer_view& lw, const float* xb, float* cache, projection p,
                  int h) {
  const auto& s = c.s;
  const int n = c.b.num_tokens, hd = s.head_dim, half = hd / 2;
  const bool is_q = p == projection::q;
  const float* w = is_q ? lw.wq : (p == projection::k ? lw.wk : lw.wv);
  const float* bias = is_q ? lw.bq : (p == projection::k ? lw.bk : lw.bv);
  float* out = is_q ? c.ws.q.data() : (p == projection::k ? c.ws.k.data() : c.ws.v.data());
  const int width = (is_q ? s.num_heads : s.num_kv_heads) * hd;
  c.k.gemm(linear_args(xb, s.dim, w, out, width, n, false), h * hd, (h + 1) * hd);
  // Qwen3: every head of q and k is RMS-normalised before RoPE.
  const float* head_norm = is_q ? lw.q_norm : (p == projection::k ? lw.k_norm : nullptr);
  for (int t = 0; t < n; ++t) {
    float* row = out + std::int64_t(t) * width + std::int64_t(h) * hd;
    if (bias != nullptr) {
      for (int i = 0; i < hd; ++i) row[i] += bias[h * hd + i];
    }
    if (head_norm != nullptr) c.k.rmsnorm_row(row, row, head_norm, hd, s.norm_eps);
    if (p != projection::v) {
      rope_rotate_head(row, c.ws.cos_table.data() + std::int64_t(t) * half,
                       c.ws.sin_table.data() + std::int64_t(t) * half, s);
    }
    if (!is_q) std::copy_n(row, hd, cache + std::int64_t(c.b.slot_mapping[t]) * width + std::int64_t(h) * hd);
  }
}

/// Query head h of every token against its sequence's keys and values.
void attend_head(const step_context& c, const float* k_cache, const float* v_cache, int h) {
  const auto& s = c.s;
  const int group = s.num_heads / s.num_kv_heads, qd = s.num_heads * s.head_dim;
  attention_args a;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.kv_dim = s.num_kv_heads * s.head_dim;
  a.head_offset = std::int64_t(h / group) * s.head_dim;
  a.block_size = c.kv.block_size;
  a.head_dim = s.head_dim;
  a.scale = 1.0f / std::sqrt(float(s.head_dim));
  a.scores = c.ws.scores.data() + std::int64_t(omp_get_thread_num()) * c.max_keys;
  for (int t = 0; t < c.b.num_tokens; ++t) {
    a.q = c.ws.q.data() + std::int64_t(t) * qd + std::int64_t(h) * s.head_dim;
    a.block_table = c.b.block_tables + std::int64_t(c.ws.seq_of_token[t]) * c.b.block_table_stride;
    a.num_keys = c.b.positions[t] + 1;  // causal: keys at positions 0..p
    a.out = c.ws.attn.data() + std::int64_t(t) * qd + std::int64_t(h) * s.head_dim;
    c.k.attention(a);
  }
}

void attention_block(const step_context& c, const llama_layer_view& lw, float* k_cache, float* v_cache,
                     stage_clock& clock) {
  const auto& s = c.s;
  const int group = s.num_heads / s.num_kv_heads;
  float* xb = c.xb();
  normalize_rows(c, lw.attn_norm, xb);
  clock.mark(forward_stage::norm);
#pragma omp for schedule(dynamic, 1) nowait
  for (int g = 0; g < s.num_kv_heads; ++g) {
    project_head(c, lw, xb, k_cache, projection::k, g);
    project_head(c, lw, xb, v_cache, projection::v, g);
    for (int h = g * group; h < (g + 1) * group; ++h) project_head(c, lw, xb, nullptr, projection::q, h);
    clock.mark(forward_stage::qkv_rope);
    for (int h = g * group; h < (g + 1) * group; ++h) attend_head(c, k_cache, v_cache, h);
    clock.mark(forward_stage::attention);
  }
  clock.barrier();
}

void layer_forward(const step_context& c, int l, stage_clock& clock) {
  const auto& s = c.s;
  const auto& lw = c.w.layers[l];
  const int n = c.b.num_tokens, d = s.dim, hidden = s.hidden_dim, qd = s.num_heads * s.head_dim;
  attention_block(c, lw, c.kv.k[l], c.kv.v[l], clock);
  // Residual adds ride on the GEMM: x += attn * wo^T.
  for_chunks(d, chunk_rows(d), [&](int r0, int r1) {
    c.k.gemm(linear_args(c.ws.attn.data(), qd, lw.wo, c.ws.x.data(), d, n, true), r0, r1);
  });
  clock.mark(forward_stage::attn_out);
  clock.barrier();
  float* xb = c.xb();
  normalize_rows(c, lw.ffn_norm, xb);
  clock.mark(forward_stage::norm);
  for_chunks(hidden, chunk_rows(hidden), [&](int r0, int r1) {
    c.k.gemm(linear_args(xb, d, lw.w_gate, c.ws.hb.data(), hidden, n, false), r0, r1);
    c.k.gemm(linear_args(xb, d, lw.w_up, c.ws.hb2.data(), hidden, n, false), r0, r1);
    for (int t = 0; t < n; ++t) {
      const std::int64_t off = std::int64_t(t) * hidden + r0;
      c.k.silu_mul(c.ws.hb.data() + off, c.ws.hb2.data() + off, r1 - r0);
    }
  });
  clock.mark(forward_stage::gate_up);
  clock.barrier();
  for_chunks(d, chunk_rows(d), [&](int r0, int r1) {
    c.k.gemm(linear_args(c.ws.hb.data(), hidden, lw.w_down, c.ws.x.data(), d, n, true), r0, r1);
  });
  clock.mark(forward_stage::down);
  clock.barrier();
}

/// Only the rows that are sampled go through the final norm and the classifier.
void logits_forward(const step_context& c, stage_clock& clock) {
  const int d = c.s.dim, num_logits = c.b.num_logits, vocab = c.s.vocab_size;
  float* rows = c.xb();  // free again: the last layer is done
  for (int i = 0; i < num_logits; ++i) {
    c.k.rmsnorm_row(rows + std::int64_t(i) * d, c.ws.x.data() + std::int64_t(c.b.logit_indices[i]) * d,
                    c.w.final_norm, d, c.s.norm_eps);
  }
  clock.mark(forward_stage::norm);
  for_chunks(vocab, chunk_rows(vocab), [&](int r0, int r1) {
    c.k.gemm(linear_args(rows, d, c.w.classifier, c.logits, vocab, num_logits, false), r0, r1);
  });
  clock.mark(forward_stage::logits);
  clock.barrier();
}

void step_forward(const step_context& c, stage_times* times) {
  stage_clock clock(times);
  const int n = c.b.num_tokens, d = c.s.dim, half = c.s.head_dim / 2;
#pragma omp for schedule(static) nowait
  for (int t = 0; t < n; ++t) {
    std::copy_n(c.w.token_embedding + std::int64_t(c.b.token_ids[t]) * d, d, c.ws.x.data() + std::int64_t(t) * d);
    for (int j = 0; j < half; ++j) {
      const float angle = float(c.b.positions[t]) * c.ws.inv_freq[j];
      c.ws.cos_table[std::size_t(t) * half + j] = std::cos(angle);
      c.ws.sin_table[std::size_t(t) * half + j] = std::sin(angle);
    }
  }
  clock.mark(forward_stage::embed);
  clock.barrier();
  for (int l = 0; l < c.s.num_layers; ++l) layer_forward(c, l, clock);
  if (c.b.num_logits > 0) logits_forward(c, clock);
}

/// Sizes the workspace for this batch and fills what the team reads but never writes.
int prepare_workspace(const llama_shape& s, const ragged_batch_view& b, llama_workspace& ws, int num_threads) {
  const std::int64_t n = b.num_tokens, d = s.dim, half = s.head_dim / 2;
  grow(ws.x, n * d);
  grow(ws.xb, std::max<std::int64_t>(n, b.num_logits) * d * num_threads);
  grow(ws.q, n * s.num_heads * s.head_dim);
  grow(ws.k, n * s.num_kv_heads * s.head_dim);
  grow(ws.v, n * s.num_kv_heads * s.head_dim);
  grow(ws.attn, n * s.num_heads * s.head_dim);
  grow(ws.hb, n * s.hidden_dim);
  grow(ws.hb2, n * s.hidden_dim);
  grow(ws.cos_table, n * half);
  grow(ws.sin_table, n * half);
  if (std::int64_t(ws.inv_freq.size()) != half) {
    ws.inv_freq.resize(std::size_t(half));
    for (int j = 0; j < half; ++j) ws.inv_freq[j] = rope_inv_freq(j, s);
  }
  if (ws.seq_of_token.size() < std::size_t(n)) ws.seq_of_token.resize(std::size_t(n));
  int max_keys = 1;
  for (int q = 0; q < b.num_seqs; ++q) {
    for (int t = b.query_start[q]; t < b.query_start[q + 1]; ++t) {
      ws.seq_of_token[t] = q;
      max_keys = std::max(max_keys, b.positions[t] + 1);
    }
  }
  grow(ws.scores, std::int64_t(max_keys) * num_threads);
  return max_keys;
}

/// Scoring: the final norm of the scored rows, then a dot product per named classifier
/// row instead of the whole vocabulary (a few rows: one thread).
void score_rows(const step_context& c, float* row_logits) {
  const std::int64_t d = c.s.dim;
  float* normed = c.ws.xb.data();  // sized for every token of the step
  for (int i = 0; i < c.b.num_scored; ++i) {
    c.k.rmsnorm_row(normed + i * d, c.ws.x.data() + std::int64_t(c.b.scored_indices[i]) * d, c.w.final_norm,
                    c.s.dim, c.s.norm_eps);
  }
  classifier_rows(row_logits, normed, c.w.classifier, c.b.row_logit_positions, c.b.row_logit_ids,
                  c.b.num_row_logits, c.s.dim);
}

}  // namespace

void llama_forward(const llama_shape& s, const llama_weights_view& w, const paged_kv_view& kv,
                   const ragged_batch_view& b, llama_workspace& ws, float* logits, float* row_logits,
                   const forward_options& options) {
  const int num_threads = std::max(1, options.num_threads);
  const int max_keys = prepare_workspace(s, b, ws, num_threads);
  const auto& kernels = options.kernels != nullptr ? *options.kernels : kernels_for(detect_cpu_isa());
  const step_context c{s, w, kv, b, ws, kernels, logits, max_keys};
#pragma omp parallel num_threads(num_threads)
  step_forward(c, options.times);
  if (b.num_row_logits > 0 && row_logits != nullptr) score_rows(c, row_logits);
  if (options.times != nullptr) ++options.times->num_steps;
}

}  // namespace inflight::kernels::cpu
