// The forward pass of a ragged batch as one OpenMP parallel region per step, with five
// barriers per layer:
//
//   [RMSNorm, Q/K/V]                               per chunk of rows of wq, wk, wv
//   [RoPE, K/V write, attention]                   per KV head group
//   [x += attn Wo]                                 per chunk of rows
//   [RMSNorm, gate and up, SiLU]                   per chunk of hidden rows
//   [x += h W_down]                                per chunk of rows
//
// A mixture of experts replaces the last two with five: the router's logits; one thread
// choosing each token's experts and sorting the (token, expert) slots by expert; the
// normalized rows gathered in that order; each chosen expert's gate and up over all of
// its rows, then its W_down (an expert's weights are read once per step, however many
// tokens chose it); and the gated sum onto x. A shared expert then runs as the dense MLP.
//
// Each thread normalizes every row into its own buffer (cheap next to the GEMMs) rather
// than waiting at a barrier for a shared copy, and prepares it there once per input
// format its products read (weight_types.hpp). The Q/K/V rows are shared out in small
// chunks like every other product's (whole heads per thread left the team waiting on the
// last head), then each KV head's RoPE, cache writes and attention. The SwiGLU
// output is prepared for W_down by the owner of each chunk of hidden rows (chunks are
// whole blocks of the format), so it needs no barrier of its own either.
// Chunks are taken dynamically: a thread the OS runs late does not hold the others up.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>

#include "kernels/cpu/llama.hpp"
#include "kernels/cpu/llama_workspace.hpp"

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
  int max_rows;  ///< rows of a prepared region: max(tokens, logits)
  bool has_lora; ///< some token uses a LoRA adapter

  /// This thread's normalized copy of the rows [num_tokens x dim].
  float* xb() const { return ws.xb.data() + std::int64_t(omp_get_thread_num()) * b.num_tokens * s.dim; }
  /// This thread's region for inputs prepared in `format` (not f32) [max_rows x prepared_stride].
  std::byte* prepared(input_format format) const {
    const std::int64_t region = std::int64_t(max_rows) * ws.prepared_stride;
    return ws.prepared.data() + (std::int64_t(omp_get_thread_num()) * (num_input_formats - 1) + int(format) - 1) * region;
  }
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

/// Rows per chunk of a linear layer: a few chunks per thread for balance, whole
/// micro-tiles, and whole multiples of `align` rows.
int chunk_rows(int rows, int align = 4) {
  const int per_chunk = rows / (8 * std::max(1, omp_get_num_threads()));
  return std::clamp((per_chunk + align - 1) / align * align, std::max(16, align), std::max(256, align));
}

input_format format_of(const weight_view& w) { return input_of(w.type); }

/// Values per scale of a prepared format: the granularity at which rows can be split.
int format_block(input_format format) {
  return format == input_format::q8_k ? 256 : (format == input_format::q8_0 ? 32 : 1);
}

/// One input [n x k] (f32 rows) as the products of each input format read it.
struct product_inputs {
  const std::byte* rows[num_input_formats] = {};
  std::int64_t stride[num_input_formats] = {};  ///< bytes
};

/// The f32 rows of an input.
const float* in_rows_f32(const product_inputs& in) {
  return reinterpret_cast<const float*>(in.rows[int(input_format::f32)]);
}

void count_prepared(const step_context& c, input_format format, std::int64_t values) {
#pragma omp atomic
  c.ws.num_prepared_values[int(format)] += values;
}

/// Prepares x [n x k] once for each format the given weights read, in this thread's regions.
product_inputs prepare_inputs(const step_context& c, const float* x, int n, int k,
                              std::initializer_list<const weight_view*> weights) {
  product_inputs in;
  in.rows[int(input_format::f32)] = reinterpret_cast<const std::byte*>(x);
  in.stride[int(input_format::f32)] = std::int64_t(k) * 4;
  for (const weight_view* w : weights) {
    const auto f = format_of(*w);
    if (f == input_format::f32 || in.rows[int(f)] != nullptr) continue;
    std::byte* out = c.prepared(f);
    c.k.prepare[int(f)]({x, k, n, k, 0, k, out, c.ws.prepared_stride});
    in.rows[int(f)] = out;
    in.stride[int(f)] = c.ws.prepared_stride;
    count_prepared(c, f, std::int64_t(n) * k);
  }
  return in;
}

/// y [n x ldy] (+)= x W^T over rows [r0, r1) of W, x read in W's input format.
void product(const step_context& c, const product_inputs& in, const weight_view& w, float* y, int ldy, int n, int k,
             bool accumulate, int r0, int r1) {
  const int f = int(format_of(w));
  c.k.weights[int(w.type)].gemm({in.rows[f], in.stride[f], w, y, ldy, n, k, accumulate}, r0, r1);
}

/// Every row of x, normalized into `out` (each thread its own copy).
void normalize_rows(const step_context& c, const float* norm_w, float* out) {
  const int d = c.s.dim;
  for (int t = 0; t < c.b.num_tokens; ++t) {
    c.k.rmsnorm_row(out + std::int64_t(t) * d, c.ws.x.data() + std::int64_t(t) * d, norm_w, d, c.s.norm_eps);
  }
}

// ---- LoRA: y += scale * B (A x) for the tokens whose adapter changes a projection.
// A sequence's tokens are consecutive and share its adapter: one segment each, as SGMV
// batches them. scale * A x of every segment is computed once per stage over the team
// (lora_down, which ends with the omp for's barrier), then each chunk of a product adds
// B's rows of that chunk (lora_up), both with the f32 product kernel. Without adapter
// tokens none of this runs.

/// Sequence `seq`'s update of projection p in layer l; null when it has none.
const lora_projection_view* lora_of(const step_context& c, int l, lora_target p, int seq) {
  const int first = c.b.query_start[seq];
  if (first == c.b.query_start[seq + 1]) return nullptr;
  const int a = c.b.adapters[first];
  if (a < 0) return nullptr;
  const auto& v = c.w.adapters[a].layers[l][std::size_t(p)];
  return v.a != nullptr ? &v : nullptr;
}

float* lora_u(const step_context& c, lora_target p, int t) {
  return c.ws.lora_u.data() + (std::int64_t(p) * c.b.num_tokens + t) * c.w.max_lora_rank;
}

/// u = scale * A x for each sequence and target whose adapter has one; x [num_tokens x in].
void lora_down(const step_context& c, int l, std::initializer_list<lora_target> targets, const float* x, int in) {
  const int num_items = c.b.num_seqs * int(targets.size());
#pragma omp for schedule(dynamic, 1)
  for (int item = 0; item < num_items; ++item) {
    const int seq = item / int(targets.size());
    const lora_target p = targets.begin()[item % int(targets.size())];
    const auto* v = lora_of(c, l, p, seq);
    if (v == nullptr) continue;
    const int first = c.b.query_start[seq], n = c.b.query_start[seq + 1] - first;
    float* u = lora_u(c, p, first);
    c.k.gemm({x + std::int64_t(first) * in, in, v->a, in, u, c.w.max_lora_rank, n, in, false}, 0, v->rank);
    for (int t = 0; t < n; ++t)
      for (int i = 0; i < v->rank; ++i) u[std::int64_t(t) * c.w.max_lora_rank + i] *= v->scale;
  }
}

/// y[t][r] += B[r] . u[t] for r in [r0, r1) of every token with an update of p; y rows of `ldy`.
void lora_up(const step_context& c, int l, lora_target p, float* y, int ldy, int r0, int r1) {
  for (int seq = 0; seq < c.b.num_seqs; ++seq) {
    const auto* v = lora_of(c, l, p, seq);
    if (v == nullptr) continue;
    const int first = c.b.query_start[seq], n = c.b.query_start[seq + 1] - first;
    c.k.gemm({lora_u(c, p, first), c.w.max_lora_rank, v->b, v->rank, y + std::int64_t(first) * ldy, ldy, n, v->rank, true},
             r0, r1);
  }
}

enum class projection { q, k, v };

/// One projection's matrix and outputs.
struct projection_rows {
  const weight_view* w;
  float* out;
  int width;  ///< output columns (rows of w)
};

projection_rows rows_of(const step_context& c, const llama_layer_view& lw, projection p) {
  const int hd = c.s.head_dim;
  if (p == projection::q) return {&lw.wq, c.ws.q.data(), c.s.num_heads * hd};
  if (p == projection::k) return {&lw.wk, c.ws.k.data(), c.s.num_kv_heads * hd};
  return {&lw.wv, c.ws.v.data(), c.s.num_kv_heads * hd};
}

/// Q, K and V of every token (rows of the three projections in chunks over the team),
/// then a barrier: a thread's share of the rows does not depend on the heads it attends.
void project_qkv(const step_context& c, int l, const llama_layer_view& lw, const product_inputs& in,
                 stage_clock& clock) {
  if (c.has_lora) lora_down(c, l, {lora_target::q, lora_target::k, lora_target::v}, in_rows_f32(in), c.s.dim);
  const projection_rows m[3] = {rows_of(c, lw, projection::q), rows_of(c, lw, projection::k),
                                rows_of(c, lw, projection::v)};
  int chunk[3], first[4] = {0};
  for (int i = 0; i < 3; ++i) {
    chunk[i] = chunk_rows(m[i].width, 16);
    first[i + 1] = first[i] + (m[i].width + chunk[i] - 1) / chunk[i];
  }
#pragma omp for schedule(dynamic, 1) nowait
  for (int item = 0; item < first[3]; ++item) {
    const int i = item < first[1] ? 0 : (item < first[2] ? 1 : 2), r0 = (item - first[i]) * chunk[i];
    const int r1 = std::min(m[i].width, r0 + chunk[i]);
    product(c, in, *m[i].w, m[i].out, m[i].width, c.b.num_tokens, c.s.dim, false, r0, r1);
    if (c.has_lora) lora_up(c, l, lora_target(i), m[i].out, m[i].width, r0, r1);  // q, k, v in order
  }
  clock.mark(forward_stage::qkv_rope);
  clock.barrier();
}

/// One head of Q, K or V for every token: the bias, the head's RMSNorm (Qwen3), RoPE for
/// Q and K (the windowed layers' own table under local_rope()), and the write of K and V
/// into the paged cache.
void finish_head(const step_context& c, const llama_layer_view& lw, std::byte* cache, projection p, int h, bool local) {
  const auto& s = c.s;
  const int n = c.b.num_tokens, hd = s.head_dim, half = s.rope_pairs();
  const bool is_q = p == projection::q;
  const float* bias = is_q ? lw.bq : (p == projection::k ? lw.bk : lw.bv);
  const auto m = rows_of(c, lw, p);
  const float* head_norm = is_q ? lw.q_norm : (p == projection::k ? lw.k_norm : nullptr);
  const auto store = c.k.store_kv[int(c.kv.type)];
  const float* cos_table = local ? c.ws.local_cos.data() : c.ws.cos_table.data();
  const float* sin_table = local ? c.ws.local_sin.data() : c.ws.sin_table.data();
  const std::int64_t el = element_bytes(c.kv.type);
  for (int t = 0; t < n; ++t) {
    float* row = m.out + std::int64_t(t) * m.width + std::int64_t(h) * hd;
    if (bias != nullptr) {
      for (int i = 0; i < hd; ++i) row[i] += bias[h * hd + i];
    }
    if (head_norm != nullptr) c.k.rmsnorm_row(row, row, head_norm, hd, s.norm_eps);
    if (p != projection::v) {
      rope_rotate_head(row, cos_table + std::int64_t(t) * half, sin_table + std::int64_t(t) * half, s);
    }
    if (!is_q) {  // [kv heads][blocks][block_size][head_dim]
      const std::int64_t slot = c.b.slot_mapping[t];
      store(cache + (std::int64_t(h) * c.kv.num_blocks * c.kv.block_size + slot) * hd * el, row, hd);
    }
  }
}

/// Query head h of every token against its sequence's keys and values (the last
/// `window` of them when not 0); the consecutive tokens of a sequence (a prompt chunk)
/// in one call, which shares their key loads.
void attend_head(const step_context& c, const std::byte* k_cache, const std::byte* v_cache, int h, int window,
                 const float* sinks) {
  const auto& s = c.s;
  const int group = s.num_heads / s.num_kv_heads, qd = s.num_heads * s.head_dim;
  const std::int64_t head_bytes = std::int64_t(c.kv.num_blocks) * c.kv.block_size * s.head_dim * element_bytes(c.kv.type);
  attention_args a;
  a.k_cache = k_cache + (h / group) * head_bytes;  // the KV head's region
  a.v_cache = v_cache + (h / group) * head_bytes;
  a.type = c.kv.type;
  a.block_size = c.kv.block_size;
  a.head_dim = s.head_dim;
  a.scale = s.attention_scale > 0.0f ? s.attention_scale : 1.0f / std::sqrt(float(s.head_dim));
  a.window = window;
  a.softcap = s.attn_softcap;
  if (sinks != nullptr) a.sink = sinks[h];
  a.scores = c.ws.scores.data() + std::int64_t(omp_get_thread_num()) * attention_tile * c.max_keys;
  a.q_stride = a.out_stride = qd;
  for (int t = 0, end = 0; t < c.b.num_tokens; t = end) {
    const int seq = c.ws.seq_of_token[t];
    for (end = t + 1; end < c.b.num_tokens && c.ws.seq_of_token[end] == seq &&
                      c.b.positions[end] == c.b.positions[end - 1] + 1;
         ++end) {
    }
    a.q = c.ws.q.data() + std::int64_t(t) * qd + std::int64_t(h) * s.head_dim;
    a.num_queries = end - t;
    a.block_table = c.b.block_tables + std::int64_t(seq) * c.b.block_table_stride;
    a.num_keys = c.b.positions[t] + 1;  // causal: keys at positions 0..p
    a.out = c.ws.attn.data() + std::int64_t(t) * qd + std::int64_t(h) * s.head_dim;
    c.k.attention(a);
  }
}

void attention_block(const step_context& c, int l, std::byte* k_cache, std::byte* v_cache, stage_clock& clock) {
  const auto& s = c.s;
  const auto& lw = c.w.layers[l];
  const int group = s.num_heads / s.num_kv_heads;
  const bool windowed = s.layer_windowed(l), local = windowed && s.local_rope();
  const int window = windowed ? s.sliding_window : 0;
  float* xb = c.xb();
  normalize_rows(c, lw.attn_norm, xb);
  const auto in = prepare_inputs(c, xb, c.b.num_tokens, s.dim, {&lw.wq, &lw.wk, &lw.wv});
  clock.mark(forward_stage::norm);
  project_qkv(c, l, lw, in, clock);
  if (s.num_kv_heads >= omp_get_num_threads()) {
#pragma omp for schedule(dynamic, 1) nowait
    for (int g = 0; g < s.num_kv_heads; ++g) {
      finish_head(c, lw, k_cache, projection::k, g, local);
      finish_head(c, lw, v_cache, projection::v, g, local);
      for (int h = g * group; h < (g + 1) * group; ++h) finish_head(c, lw, nullptr, projection::q, h, local);
      for (int h = g * group; h < (g + 1) * group; ++h) attend_head(c, k_cache, v_cache, h, window, lw.sinks);
      clock.mark(forward_stage::attention);
    }
  } else {
    // Fewer KV heads than threads (Gemma 3's single one): every head's RoPE and cache
    // writes first, then the query heads' attention spread over the team.
    const int num_items = 2 * s.num_kv_heads + s.num_heads;
#pragma omp for schedule(dynamic, 1)
    for (int item = 0; item < num_items; ++item) {
      if (item < s.num_kv_heads) {
        finish_head(c, lw, k_cache, projection::k, item, local);
      } else if (item < 2 * s.num_kv_heads) {
        finish_head(c, lw, v_cache, projection::v, item - s.num_kv_heads, local);
      } else {
        finish_head(c, lw, nullptr, projection::q, item - 2 * s.num_kv_heads, local);
      }
    }
    clock.mark(forward_stage::qkv_rope);
#pragma omp for schedule(dynamic, 1) nowait
    for (int h = 0; h < s.num_heads; ++h) attend_head(c, k_cache, v_cache, h, window, lw.sinks);
    clock.mark(forward_stage::attention);
  }
  clock.barrier();
}

/// The MLP's activation: act(gate) * up in place of gate.
auto activation(const step_context& c) {
  switch (c.s.activation) {
    case mlp_kind::gelu_tanh: return c.k.gelu_mul;
    case mlp_kind::swiglu_oai: return c.k.swiglu_oai_mul;
    case mlp_kind::silu: break;
  }
  return c.k.silu_mul;
}

/// rows[t][r] += bias[r] for r in [r0, r1) of n rows of `width` (a bias after a chunk of rows).
void add_bias(float* rows, int width, int n, const float* bias, int r0, int r1) {
  if (bias == nullptr) return;
  for (int t = 0; t < n; ++t) {
    float* row = rows + std::int64_t(t) * width;
    for (int r = r0; r < r1; ++r) row[r] += bias[r];
  }
}

/// act(gate) * up over hidden rows [r0, r1) of every token (SiLU or GELU; a mixture's
/// shared expert scaled by its gate, `shared_gate` per token), then those columns of hb
/// prepared for W_down (shared: each chunk's owner prepares its own columns).
void gate_up_chunk(const step_context& c, int l, const llama_layer_view& lw, const product_inputs& in,
                   const float* shared_gate, int r0, int r1) {
  const int n = c.b.num_tokens, d = c.s.dim, hidden = c.s.hidden_dim;
  product(c, in, lw.w_gate, c.ws.hb.data(), hidden, n, d, false, r0, r1);
  product(c, in, lw.w_up, c.ws.hb2.data(), hidden, n, d, false, r0, r1);
  if (c.has_lora) {
    lora_up(c, l, lora_target::gate, c.ws.hb.data(), hidden, r0, r1);
    lora_up(c, l, lora_target::up, c.ws.hb2.data(), hidden, r0, r1);
  }
  const auto act = activation(c);
  for (int t = 0; t < n; ++t) {
    const std::int64_t off = std::int64_t(t) * hidden + r0;
    act(c.ws.hb.data() + off, c.ws.hb2.data() + off, r1 - r0);
    if (shared_gate != nullptr) {
      for (int i = 0; i < r1 - r0; ++i) c.ws.hb[std::size_t(off + i)] *= shared_gate[t];
    }
  }
  const auto f = format_of(lw.w_down);
  if (f == input_format::f32) return;
  c.k.prepare[int(f)]({c.ws.hb.data(), hidden, n, hidden, r0, r1, c.ws.hb_prepared.data(), c.ws.hb_prepared_stride});
  count_prepared(c, f, std::int64_t(n) * (r1 - r0));
}

/// x += rmsnorm(y) * w for every token: an output normed before it joins the residual
/// (post_norms), then a barrier.
void add_normed(const step_context& c, const float* w, stage_clock& clock) {
  const int d = c.s.dim;
#pragma omp for schedule(static) nowait
  for (int t = 0; t < c.b.num_tokens; ++t) {
    float* y = c.ws.y.data() + std::int64_t(t) * d;
    float* x = c.ws.x.data() + std::int64_t(t) * d;
    c.k.rmsnorm_row(y, y, w, d, c.s.norm_eps);
    for (int i = 0; i < d; ++i) x[i] += y[i];
  }
  clock.mark(forward_stage::norm);
  clock.barrier();
}

/// The dense gated MLP over the normalized rows xb: x += (act(xb Wg) * xb Wu) Wd, or with
/// a post-norm x += rmsnorm(that) * w.
void dense_mlp(const step_context& c, int l, const llama_layer_view& lw, const float* xb, stage_clock& clock) {
  const int n = c.b.num_tokens, d = c.s.dim, hidden = c.s.hidden_dim;
  const auto ffn_in = prepare_inputs(c, xb, n, d, {&lw.w_gate, &lw.w_up});
  if (c.has_lora) lora_down(c, l, {lora_target::gate, lora_target::up}, xb, d);
  // A shared expert's gate per token: sigmoid(xb . gate), each thread its own copy.
  float* shared_gate = nullptr;
  if (lw.shared_expert_gate != nullptr) {
    shared_gate = c.ws.shared_gate.data() + std::int64_t(omp_get_thread_num()) * n;
    for (int t = 0; t < n; ++t) {
      const float* row = xb + std::int64_t(t) * d;
      float dot = 0.0f;
      for (int i = 0; i < d; ++i) dot += row[i] * lw.shared_expert_gate[i];
      shared_gate[t] = 1.0f / (1.0f + std::exp(-dot));
    }
  }
  clock.mark(forward_stage::norm);
  for_chunks(hidden, chunk_rows(hidden, format_block(format_of(lw.w_down))),
             [&](int r0, int r1) { gate_up_chunk(c, l, lw, ffn_in, shared_gate, r0, r1); });
  clock.mark(forward_stage::gate_up);
  clock.barrier();
  if (c.has_lora) lora_down(c, l, {lora_target::down}, c.ws.hb.data(), hidden);
  product_inputs down_in;
  const auto f = int(format_of(lw.w_down));
  down_in.rows[f] = f == 0 ? reinterpret_cast<const std::byte*>(c.ws.hb.data()) : c.ws.hb_prepared.data();
  down_in.stride[f] = f == 0 ? std::int64_t(hidden) * 4 : c.ws.hb_prepared_stride;
  const bool post = lw.post_ffn_norm != nullptr;
  for_chunks(d, chunk_rows(d), [&](int r0, int r1) {
    float* out = post ? c.ws.y.data() : c.ws.x.data();
    product(c, down_in, lw.w_down, out, d, n, hidden, !post, r0, r1);
    if (c.has_lora) lora_up(c, l, lora_target::down, out, d, r0, r1);
  });
  clock.mark(forward_stage::down);
  clock.barrier();
  if (post) add_normed(c, lw.post_ffn_norm, clock);
}

/// Rows [first, ...) of w: one expert's matrix out of the stacked ones.
weight_view rows_from(const weight_view& w, std::int64_t first) {
  weight_view v = w;
  v.data = w.data + first * w.row_bytes;
  return v;
}

/// One thread: each token's experts and gates, then the (token, choice) slots sorted by
/// expert (a counting sort: tokens keep their order within an expert).
void group_slots(const step_context& c) {
  const auto& s = c.s;
  auto& ws = c.ws;
  const int n = c.b.num_tokens, num_experts = s.num_experts, k = s.experts_per_token;
  route_experts(ws.router_logits.data(), n, num_experts, k, s.expert_sigmoid, s.expert_normalize,
                ws.token_expert.data(), ws.token_gate.data());
  std::fill(ws.expert_first.begin(), ws.expert_first.begin() + num_experts + 1, 0);
  for (int i = 0; i < n * k; ++i) ++ws.expert_first[ws.token_expert[i] + 1];
  ws.active_experts.clear();
  for (int e = 0; e < num_experts; ++e) {
    if (ws.expert_first[e + 1] > 0) ws.active_experts.push_back(e);
    ws.expert_first[e + 1] += ws.expert_first[e];
  }
  for (int i = 0; i < n * k; ++i) {
    const int e = ws.token_expert[i];
    const int slot = ws.expert_first[e]++;  // moves each start on: undone below
    ws.slot_token[slot] = i / k;
    ws.slot_of[i] = slot;
  }
  for (int e = num_experts; e > 0; --e) ws.expert_first[e] = ws.expert_first[e - 1];
  ws.expert_first[0] = 0;
}

/// The slot rows of the experts' input in `format`: f32 rows or the prepared region.
struct slot_inputs {
  product_inputs in;
  /// Rows from slot `first` on.
  product_inputs from(int first) const {
    product_inputs out = in;
    for (int f = 0; f < num_input_formats; ++f) {
      if (out.rows[f] != nullptr) out.rows[f] += std::int64_t(first) * out.stride[f];
    }
    return out;
  }
};

/// A mixture of experts over the normalized rows xb: the router's logits, each token's
/// experts, then every chosen expert over all of its tokens at once (its weights read
/// once per step), and x += each token's experts' outputs times their gates.
void moe_block(const step_context& c, const llama_layer_view& lw, const float* xb, stage_clock& clock) {
  const auto& s = c.s;
  auto& ws = c.ws;
  const int n = c.b.num_tokens, d = s.dim, num_experts = s.num_experts, k = s.experts_per_token;
  const int ff = s.expert_hidden_dim, num_slots = n * k;
  const auto router_in = prepare_inputs(c, xb, n, d, {&lw.router});
  for_chunks(num_experts, chunk_rows(num_experts), [&](int r0, int r1) {
    product(c, router_in, lw.router, ws.router_logits.data(), num_experts, n, d, false, r0, r1);
    add_bias(ws.router_logits.data(), num_experts, n, lw.router_bias, r0, r1);
  });
  clock.mark(forward_stage::gate_up);
  clock.barrier();
#pragma omp single
  group_slots(c);
  // The rows in slot order, prepared for the experts' gate and up formats.
  slot_inputs slots;
  slots.in.rows[0] = reinterpret_cast<const std::byte*>(ws.slot_rows.data());
  slots.in.stride[0] = std::int64_t(d) * 4;
  int region = 0;
  for (const weight_view* w : {&lw.gate_exps, &lw.up_exps}) {
    const auto f = format_of(*w);
    if (f == input_format::f32 || slots.in.rows[int(f)] != nullptr) continue;
    slots.in.rows[int(f)] = ws.slot_prepared.data() + std::int64_t(region++) * num_slots * ws.slot_prepared_stride;
    slots.in.stride[int(f)] = ws.slot_prepared_stride;
  }
  for_chunks(num_slots, 16, [&](int r0, int r1) {
    for (int i = r0; i < r1; ++i) {
      std::copy_n(xb + std::int64_t(ws.slot_token[i]) * d, d, ws.slot_rows.data() + std::int64_t(i) * d);
    }
    for (int f = 1; f < num_input_formats; ++f) {
      if (slots.in.rows[f] == nullptr) continue;
      c.k.prepare[f]({ws.slot_rows.data() + std::int64_t(r0) * d, d, r1 - r0, d, 0, d,
                      const_cast<std::byte*>(slots.in.rows[f]) + std::int64_t(r0) * slots.in.stride[f],
                      slots.in.stride[f]});
      count_prepared(c, input_format(f), std::int64_t(r1 - r0) * d);
    }
  });
  clock.mark(forward_stage::norm);
  clock.barrier();
  // Gate and up: each expert's hidden rows over its slots, SwiGLU, prepared for W_down.
  const auto down_format = format_of(lw.down_exps);
  const auto act = activation(c);
  const int num_active = int(ws.active_experts.size());
  const int ff_chunk = chunk_rows(ff, format_block(down_format)), ff_chunks = (ff + ff_chunk - 1) / ff_chunk;
#pragma omp for schedule(dynamic, 1) nowait
  for (int item = 0; item < num_active * ff_chunks; ++item) {
    const int e = ws.active_experts[item / ff_chunks], r0 = (item % ff_chunks) * ff_chunk, r1 = std::min(ff, r0 + ff_chunk);
    const int first = ws.expert_first[e], count = ws.expert_first[e + 1] - first;
    const auto in = slots.from(first);
    float* hb = ws.hb.data() + std::int64_t(first) * ff;
    float* hb2 = ws.hb2.data() + std::int64_t(first) * ff;
    product(c, in, rows_from(lw.gate_exps, std::int64_t(e) * ff), hb, ff, count, d, false, r0, r1);
    product(c, in, rows_from(lw.up_exps, std::int64_t(e) * ff), hb2, ff, count, d, false, r0, r1);
    if (lw.gate_exps_bias != nullptr) {  // expert e's biases: rows [e ff, (e + 1) ff)
      add_bias(hb, ff, count, lw.gate_exps_bias + std::int64_t(e) * ff, r0, r1);
      add_bias(hb2, ff, count, lw.up_exps_bias + std::int64_t(e) * ff, r0, r1);
    }
    for (int i = 0; i < count; ++i) act(hb + std::int64_t(i) * ff + r0, hb2 + std::int64_t(i) * ff + r0, r1 - r0);
    if (down_format == input_format::f32) continue;
    c.k.prepare[int(down_format)]({hb, ff, count, ff, r0, r1,
                                   ws.expert_hb_prepared.data() + std::int64_t(first) * ws.expert_hb_prepared_stride,
                                   ws.expert_hb_prepared_stride});
    count_prepared(c, down_format, std::int64_t(count) * (r1 - r0));
  }
  clock.mark(forward_stage::gate_up);
  clock.barrier();
  // Down: each expert's output rows over its slots.
  product_inputs down_in;
  const int df = int(down_format);
  down_in.rows[df] = df == 0 ? reinterpret_cast<const std::byte*>(ws.hb.data()) : ws.expert_hb_prepared.data();
  down_in.stride[df] = df == 0 ? std::int64_t(ff) * 4 : ws.expert_hb_prepared_stride;
  const slot_inputs down_slots{down_in};
  const int d_chunk = chunk_rows(d), d_chunks = (d + d_chunk - 1) / d_chunk;
#pragma omp for schedule(dynamic, 1) nowait
  for (int item = 0; item < num_active * d_chunks; ++item) {
    const int e = ws.active_experts[item / d_chunks], r0 = (item % d_chunks) * d_chunk, r1 = std::min(d, r0 + d_chunk);
    const int first = ws.expert_first[e], count = ws.expert_first[e + 1] - first;
    product(c, down_slots.from(first), rows_from(lw.down_exps, std::int64_t(e) * d),
            ws.expert_out.data() + std::int64_t(first) * d, d, count, ff, false, r0, r1);
    if (lw.down_exps_bias != nullptr) {
      add_bias(ws.expert_out.data() + std::int64_t(first) * d, d, count, lw.down_exps_bias + std::int64_t(e) * d, r0, r1);
    }
  }
  clock.mark(forward_stage::down);
  clock.barrier();
  // Each token's experts, weighted by their gates, onto the residual.
#pragma omp for schedule(static) nowait
  for (int t = 0; t < n; ++t) {
    float* x = ws.x.data() + std::int64_t(t) * d;
    for (int j = 0; j < k; ++j) {
      const float gate = ws.token_gate[std::size_t(t) * k + j];
      const float* out = ws.expert_out.data() + std::int64_t(ws.slot_of[std::size_t(t) * k + j]) * d;
      for (int i = 0; i < d; ++i) x[i] += gate * out[i];
    }
  }
  clock.mark(forward_stage::down);
  clock.barrier();
}

void layer_forward(const step_context& c, int l, stage_clock& clock) {
  const auto& s = c.s;
  const auto& lw = c.w.layers[l];
  const int n = c.b.num_tokens, d = s.dim, qd = s.num_heads * s.head_dim;
  attention_block(c, l, c.kv.k[l], c.kv.v[l], clock);
  // Residual adds ride on the GEMM: x += attn * wo^T (with a post-norm, into y first).
  const auto attn_in = prepare_inputs(c, c.ws.attn.data(), n, qd, {&lw.wo});
  if (c.has_lora) lora_down(c, l, {lora_target::o}, c.ws.attn.data(), qd);
  const bool post = lw.post_attn_norm != nullptr;
  for_chunks(d, chunk_rows(d), [&](int r0, int r1) {
    float* out = post ? c.ws.y.data() : c.ws.x.data();
    product(c, attn_in, lw.wo, out, d, n, qd, !post, r0, r1);
    if (c.has_lora) lora_up(c, l, lora_target::o, out, d, r0, r1);
    add_bias(out, d, n, lw.bo, r0, r1);
  });
  clock.mark(forward_stage::attn_out);
  clock.barrier();
  if (post) add_normed(c, lw.post_attn_norm, clock);
  float* xb = c.xb();
  normalize_rows(c, lw.ffn_norm, xb);
  clock.mark(forward_stage::norm);
  if (s.num_experts > 0) moe_block(c, lw, xb, clock);
  if (s.hidden_dim > 0) dense_mlp(c, l, lw, xb, clock);
}

/// Only the rows that are sampled go through the final norm and the classifier.
void logits_forward(const step_context& c, stage_clock& clock) {
  const int d = c.s.dim, num_logits = c.b.num_logits, vocab = c.s.vocab_size;
  float* rows = c.xb();  // free again: the last layer is done
  for (int i = 0; i < num_logits; ++i) {
    c.k.rmsnorm_row(rows + std::int64_t(i) * d, c.ws.x.data() + std::int64_t(c.b.logit_indices[i]) * d,
                    c.w.final_norm, d, c.s.norm_eps);
  }
  const auto in = prepare_inputs(c, rows, num_logits, d, {&c.w.classifier});
  clock.mark(forward_stage::norm);
  const float cap = c.s.final_softcap;
  for_chunks(vocab, chunk_rows(vocab), [&](int r0, int r1) {
    product(c, in, c.w.classifier, c.logits, vocab, num_logits, d, false, r0, r1);
    if (cap <= 0.0f) return;
    for (int i = 0; i < num_logits; ++i) {
      float* row = c.logits + std::int64_t(i) * vocab;
      for (int r = r0; r < r1; ++r) row[r] = cap * std::tanh(row[r] / cap);
    }
  });
  clock.mark(forward_stage::logits);
  clock.barrier();
}

void step_forward(const step_context& c, stage_times* times) {
  stage_clock clock(times);
  const int n = c.b.num_tokens, d = c.s.dim, half = c.s.rope_pairs();
#pragma omp for schedule(static) nowait
  for (int t = 0; t < n; ++t) {
    const auto& table = c.w.token_embedding;
    float* x = c.ws.x.data() + std::int64_t(t) * d;
    c.k.weights[int(table.type)].dequantize_row(table.data + c.b.token_ids[t] * table.row_bytes, d, x);
    if (c.s.embedding_scale != 1.0f) {
      for (int i = 0; i < d; ++i) x[i] *= c.s.embedding_scale;
    }
    for (int j = 0; j < half; ++j) {
      const float angle = float(c.b.positions[t]) * c.ws.inv_freq[j];
      c.ws.cos_table[std::size_t(t) * half + j] = std::cos(angle) * c.s.rope_mscale;
      c.ws.sin_table[std::size_t(t) * half + j] = std::sin(angle) * c.s.rope_mscale;
    }
    if (!c.s.local_rope()) continue;
    for (int j = 0; j < half; ++j) {
      const float angle = float(c.b.positions[t]) * c.ws.local_inv_freq[j];
      c.ws.local_cos[std::size_t(t) * half + j] = std::cos(angle);
      c.ws.local_sin[std::size_t(t) * half + j] = std::sin(angle);
    }
  }
  clock.mark(forward_stage::embed);
  clock.barrier();
  for (int l = 0; l < c.s.num_layers; ++l) layer_forward(c, l, clock);
  if (c.b.num_logits > 0) logits_forward(c, clock);
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
  const auto& w = c.w.classifier;  // rows read through dequantize_row: any type, any alignment
  grow(c.ws.row_scratch, d);
  for (int i = 0; i < c.b.num_row_logits; ++i) {
    c.k.weights[int(w.type)].dequantize_row(w.data + c.b.row_logit_ids[i] * w.row_bytes, d, c.ws.row_scratch.data());
    const std::int32_t row = 0;  // the one dequantized row
    classifier_rows(row_logits + i, normed, c.ws.row_scratch.data(), c.b.row_logit_positions + i, &row, 1, c.s.dim);
    if (c.s.final_softcap > 0.0f) row_logits[i] = c.s.final_softcap * std::tanh(row_logits[i] / c.s.final_softcap);
  }
}

/// Embeddings: the final norm of each wanted token, summed per output where a range is
/// asked for (mean pooling); one thread, like score_rows.
void pool_hidden(const step_context& c, float* hidden) {
  const std::int64_t d = c.s.dim;
  grow(c.ws.row_scratch, d);
  float* normed = c.ws.row_scratch.data();
  for (int i = 0; i < c.b.num_hidden; ++i) {
    float* out = hidden + i * d;
    std::fill(out, out + d, 0.0f);
    const std::int64_t begin = c.b.hidden_start[i], end = begin + c.b.hidden_count[i];
    for (std::int64_t t = begin; t < end; ++t) {
      c.k.rmsnorm_row(normed, c.ws.x.data() + t * d, c.w.final_norm, c.s.dim, c.s.norm_eps);
      for (std::int64_t j = 0; j < d; ++j) out[j] += normed[j];
    }
  }
}

}  // namespace

void llama_forward(const llama_shape& s, const llama_weights_view& w, const paged_kv_view& kv,
                   const ragged_batch_view& b, llama_workspace& ws, float* logits, float* row_logits,
                   const forward_options& options, float* hidden) {
  const int num_threads = std::max(1, options.num_threads);
  const int max_keys = prepare_workspace(s, w, b, ws, num_threads);
  const auto& kernels = options.kernels != nullptr ? *options.kernels : kernels_for(detect_cpu_isa());
  const bool has_lora = b.adapters != nullptr && w.num_adapters > 0 &&
                        std::any_of(b.adapters, b.adapters + b.num_tokens, [](std::int32_t a) { return a >= 0; });
  const step_context c{s, w, kv, b, ws, kernels, logits, max_keys, std::max(b.num_tokens, b.num_logits), has_lora};
#pragma omp parallel num_threads(num_threads)
  step_forward(c, options.times);
  if (b.num_row_logits > 0 && row_logits != nullptr) score_rows(c, row_logits);
  if (b.num_hidden > 0 && hidden != nullptr) pool_hidden(c, hidden);
  if (options.times != nullptr) ++options.times->num_steps;
}

}  // namespace inflight::kernels::cpu
