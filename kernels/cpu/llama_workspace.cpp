#include "kernels/cpu/llama_workspace.hpp"

#include <algorithm>
#include <initializer_list>

namespace inflight::kernels::cpu {
namespace {

void grow(std::vector<float>& v, std::int64_t n) {
  if (std::int64_t(v.size()) < n) v.resize(std::size_t(n));
}

input_format format_of(const weight_view& w) { return input_of(w.type); }

/// The input formats the step's products read (bit f: input_format f), and the widest
/// row of W_down's.
unsigned formats_in_use(const llama_shape& s, const llama_weights_view& w, std::int64_t& hb_stride) {
  unsigned formats = 1u << int(format_of(w.classifier));
  hb_stride = 0;
  for (int l = 0; l < s.num_layers; ++l) {
    const auto& lw = w.layers[l];
    for (const weight_view* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down, &lw.router}) {
      formats |= 1u << int(format_of(*m));
    }
    hb_stride = std::max(hb_stride, prepared_row_bytes(format_of(lw.w_down), s.hidden_dim));
  }
  return formats;
}

/// Regions for prepared inputs: per thread and format, and hb's shared one.
void grow_prepared(const llama_shape& s, const llama_weights_view& w, std::int64_t rows, llama_workspace& ws,
                   int num_threads) {
  std::int64_t hb_stride = 0;
  const unsigned formats = formats_in_use(s, w, hb_stride);
  ws.prepared_stride = 0;
  for (int f = 1; f < num_input_formats; ++f) {
    if ((formats >> f) & 1u) {
      const std::int64_t k = std::max(s.dim, s.num_heads * s.head_dim);
      ws.prepared_stride = std::max(ws.prepared_stride, prepared_row_bytes(input_format(f), k));
    }
  }
  ws.hb_prepared_stride = hb_stride;
  const std::int64_t bytes = ws.prepared_stride * rows * (num_input_formats - 1) * num_threads;
  if (std::int64_t(ws.prepared.size()) < bytes) ws.prepared.resize(std::size_t(bytes));
  const std::int64_t hb_bytes = hb_stride * (rows > 0 ? rows : 1);
  if (std::int64_t(ws.hb_prepared.size()) < hb_bytes) ws.hb_prepared.resize(std::size_t(hb_bytes));
}

/// A mixture of experts' buffers for n tokens.
void grow_experts(const llama_shape& s, const llama_weights_view& w, std::int64_t n, llama_workspace& ws) {
  const std::int64_t slots = n * s.experts_per_token, d = s.dim, ff = s.expert_hidden_dim;
  grow(ws.router_logits, n * s.num_experts);
  grow(ws.token_gate, slots);
  grow(ws.slot_rows, slots * d);
  grow(ws.expert_out, slots * d);
  grow(ws.hb, slots * ff);
  grow(ws.hb2, slots * ff);
  for (auto* v : {&ws.token_expert, &ws.slot_token, &ws.slot_of}) {
    if (std::int64_t(v->size()) < slots) v->resize(std::size_t(slots));
  }
  ws.expert_first.resize(std::size_t(s.num_experts) + 1);
  ws.active_experts.reserve(std::size_t(s.num_experts));
  std::int64_t stride = 0, hb_stride = 0;
  for (int l = 0; l < s.num_layers; ++l) {
    const auto& lw = w.layers[l];
    for (const weight_view* m : {&lw.gate_exps, &lw.up_exps}) stride = std::max(stride, prepared_row_bytes(format_of(*m), d));
    hb_stride = std::max(hb_stride, prepared_row_bytes(format_of(lw.down_exps), ff));
  }
  ws.slot_prepared_stride = stride;
  ws.expert_hb_prepared_stride = hb_stride;
  const std::int64_t bytes = 2 * stride * slots, hb_bytes = hb_stride * slots;  // gate's and up's formats
  if (std::int64_t(ws.slot_prepared.size()) < bytes) ws.slot_prepared.resize(std::size_t(bytes));
  if (std::int64_t(ws.expert_hb_prepared.size()) < hb_bytes) ws.expert_hb_prepared.resize(std::size_t(hb_bytes));
}

}  // namespace

int prepare_workspace(const llama_shape& s, const llama_weights_view& w, const ragged_batch_view& b,
                      llama_workspace& ws, int num_threads) {
  const std::int64_t n = b.num_tokens, d = s.dim, half = s.rope_pairs();
  const std::int64_t rows = std::max<std::int64_t>(n, b.num_logits);
  grow(ws.x, n * d);
  grow(ws.xb, rows * d * num_threads);
  grow(ws.q, n * s.num_heads * s.head_dim);
  grow(ws.k, n * s.num_kv_heads * s.head_dim);
  grow(ws.v, n * s.num_kv_heads * s.head_dim);
  grow(ws.attn, n * s.num_heads * s.head_dim);
  grow(ws.hb, n * s.hidden_dim);
  grow(ws.hb2, n * s.hidden_dim);
  grow(ws.cos_table, n * half);
  grow(ws.sin_table, n * half);
  grow(ws.y, n * d);
  grow(ws.shared_gate, n * num_threads);
  if (s.local_rope()) {
    grow(ws.local_cos, n * half);
    grow(ws.local_sin, n * half);
    if (std::int64_t(ws.local_inv_freq.size()) != half) {
      const llama_shape local = s.local_rope_shape();
      ws.local_inv_freq.resize(std::size_t(half));
      for (int j = 0; j < half; ++j) ws.local_inv_freq[j] = rope_inv_freq(j, local);
    }
  }
  grow_prepared(s, w, rows, ws, num_threads);
  if (w.num_adapters > 0) grow(ws.lora_u, std::int64_t(num_lora_targets) * n * w.max_lora_rank);
  if (s.num_experts > 0) grow_experts(s, w, n, ws);
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
  grow(ws.scores, std::int64_t(max_keys + 1) * attention_tile * num_threads);
  return max_keys + 1;  // a run of queries' keys and queries: at most the last position + 2
}

}  // namespace inflight::kernels::cpu
