#pragma once
/// The Llama forward pass over a ragged batch, on the CPU: f32 activations, weights of any
/// weight type (weight_types.hpp) and a KV cache of f32, f16 or bf16, through the vector
/// kernels of cpu_isa.hpp chosen for the CPU at run time. Raw pointers in; no engine
/// types. At f32 it is the numerical reference every other backend is compared with.
///
/// The ragged batch flattens the tokens of every scheduled sequence:
///
///   tokens:      | s0: t0 t1 t2 t3 (prefill chunk) | s1: t0 (decode) | s2: t0 t1 |
///   query_start:   0                                 4                 5          7
///
/// Each token carries its position and its KV slot (block * block_size + offset).
/// Sequence s attends, for its token at position p, to keys at positions 0..p read
/// through its block table row.

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {

/// How RoPE frequencies are scaled (core's rope_scaling_type).
enum class rope_scaling_kind { none, llama3, linear, yarn };
/// The gated MLP's activation (core's mlp_activation).
enum class mlp_kind { silu, gelu_tanh, swiglu_oai };

struct llama_shape {
  int dim = 0;
  int hidden_dim = 0;  ///< the dense MLP's width (a mixture's shared expert; 0: none)
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  bool rope_interleaved = true;  ///< pairs (2i,2i+1); false: (i, i+rope_dims/2)
  int rope_dims = 0;             ///< rotated dimensions of each head (the first ones); 0: head_dim
  rope_scaling_kind rope_scaling = rope_scaling_kind::none;
  float rope_factor = 1.0f;      ///< llama3, linear, yarn
  float rope_low_freq_factor = 1.0f;   ///< llama3
  float rope_high_freq_factor = 4.0f;  ///< llama3
  int rope_original_max_position = 8192;  ///< llama3, yarn
  float rope_beta_fast = 32.0f;  ///< yarn
  float rope_beta_slow = 1.0f;   ///< yarn
  float rope_mscale = 1.0f;      ///< cos and sin are scaled by it (YaRN's, LongRoPE's attention factor)
  const float* rope_pair_factors = nullptr;  ///< [rope_pairs()]: each pair's frequency divided by it (LongRoPE)
  // A mixture of experts (num_experts > 0): the MLP of every layer.
  int num_experts = 0;
  int experts_per_token = 0;
  int expert_hidden_dim = 0;
  bool expert_sigmoid = false;    ///< gates: sigmoid of the router logits (else softmax over all)
  bool expert_normalize = false;  ///< the chosen experts' gates rescaled to sum to 1
  // Sliding windows (core's model_config): a windowed layer's query at p reads keys
  // (p - sliding_window, p]; layer l is windowed unless window_period > 0 and
  // l % window_period == window_period - 1.
  int sliding_window = 0;
  int window_period = 0;
  float rope_local_theta = 0.0f;  ///< the windowed layers' RoPE base, unscaled; 0: as the others
  // Gemma's additions; the defaults are a Llama layer.
  mlp_kind activation = mlp_kind::silu;  ///< of the dense MLP and the experts
  float embedding_scale = 1.0f;   ///< embeddings times it
  float attention_scale = 0.0f;   ///< 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;      ///< scores c * tanh(s / c); 0: none
  float final_softcap = 0.0f;     ///< logits c * tanh(l / c); 0: none

  bool layer_windowed(int l) const {
    return sliding_window > 0 && (window_period <= 0 || l % window_period != window_period - 1);
  }
  /// Whether windowed layers rotate with their own RoPE table.
  bool local_rope() const { return sliding_window > 0 && rope_local_theta > 0.0f; }
  /// The shape the windowed layers rotate with under local_rope(): their base, unscaled.
  llama_shape local_rope_shape() const {
    llama_shape s = *this;
    s.rope_theta = rope_local_theta;
    s.rope_scaling = rope_scaling_kind::none;
    s.rope_mscale = 1.0f;
    s.rope_pair_factors = nullptr;
    return s;
  }

  /// Rotated dimensions per head, and the pairs they form.
  int rotary_dims() const { return rope_dims > 0 ? rope_dims : head_dim; }
  int rope_pairs() const { return rotary_dims() / 2; }
};

/// One layer's weights. Matrices are typed views (f32_weights() wraps a float array);
/// norms and biases are f32.
struct llama_layer_view {
  const float* attn_norm = nullptr;
  weight_view wq;  ///< [num_heads*head_dim x dim]
  weight_view wk;  ///< [num_kv_heads*head_dim x dim]
  weight_view wv;
  weight_view wo;  ///< [dim x num_heads*head_dim]
  const float* bq = nullptr;  ///< optional biases
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* ffn_norm = nullptr;
  /// [dim] each: the attention's and the MLP's outputs RMS-normed with them before they
  /// join the residual (Gemma 2 and 3); null: added as they are.
  const float* post_attn_norm = nullptr;
  const float* post_ffn_norm = nullptr;
  weight_view w_gate;  ///< [hidden x dim]
  weight_view w_down;  ///< [dim x hidden]
  weight_view w_up;    ///< [hidden x dim]
  const float* q_norm = nullptr;  ///< [head_dim], shared by every head (Qwen3); null: no q/k norm
  const float* k_norm = nullptr;  ///< [head_dim]
  // A mixture of experts: expert e's rows follow expert e-1's in each stacked matrix.
  weight_view router;     ///< [num_experts x dim]
  weight_view gate_exps;  ///< [num_experts * expert_hidden x dim]
  weight_view up_exps;    ///< [num_experts * expert_hidden x dim]
  weight_view down_exps;  ///< [num_experts * dim x expert_hidden]
  const float* shared_expert_gate = nullptr;  ///< [dim]: the dense MLP (shared expert) scaled by sigmoid(x . it)
  // gpt-oss (null elsewhere): each head's sink logit [num_heads], the output projection's
  // bias [dim], the router's [num_experts], the experts' [num_experts * rows].
  const float* sinks = nullptr;
  const float* bo = nullptr;
  const float* router_bias = nullptr;
  const float* gate_exps_bias = nullptr;
  const float* up_exps_bias = nullptr;
  const float* down_exps_bias = nullptr;
};

/// The projections a LoRA adapter may change (PEFT's target_modules of a Llama layer).
enum class lora_target { q, k, v, o, gate, up, down, count };
constexpr int num_lora_targets = int(lora_target::count);

/// One projection's low-rank update: y += scale * B (A x), A [rank x in], B [out x rank],
/// f32. A null `a`: the adapter leaves the projection as it is.
struct lora_projection_view {
  const float* a = nullptr;
  const float* b = nullptr;
  int rank = 0;
  float scale = 0.0f;
};

/// One adapter: per layer, its updates of each lora_target.
struct lora_adapter_view {
  const std::array<lora_projection_view, num_lora_targets>* layers = nullptr;  ///< [num_layers]
};

struct llama_weights_view {
  weight_view token_embedding;  ///< [vocab x dim]
  const llama_layer_view* layers = nullptr;
  const float* final_norm = nullptr;
  weight_view classifier;       ///< [vocab x dim]
  /// LoRA adapters a batch's tokens may use (ragged_batch_view::adapters); the dense MLP
  /// and attention projections only (not a mixture's experts).
  const lora_adapter_view* adapters = nullptr;
  int num_adapters = 0;
  int max_lora_rank = 0;        ///< the largest rank of any of them
};

/// Paged KV memory: per layer, [num_kv_heads][num_blocks][block_size][head_dim] elements
/// of `type` (num_blocks * block_size * kv_dim in all, as the allocator counts them): each
/// head's rows are contiguous and its blocks follow each other, so attention reads a
/// sequence's keys of one head as one stream where its blocks are consecutive. K/V rows
/// are converted when written. (The step-by-step kv_write / paged_attention below are
/// the CUDA runner's twins and use its [num_blocks][block_size][num_kv_heads][head_dim].)
struct paged_kv_view {
  std::byte* const* k = nullptr;  ///< one pointer per layer
  std::byte* const* v = nullptr;
  int num_blocks = 0;
  int block_size = 16;
  kv_type type = kv_type::f32;
};

struct ragged_batch_view {
  int num_tokens = 0;
  const std::int32_t* token_ids = nullptr;     ///< [num_tokens]
  const std::int32_t* positions = nullptr;     ///< [num_tokens]
  const std::int32_t* slot_mapping = nullptr;  ///< [num_tokens] where each token's K/V is written
  int num_seqs = 0;
  const std::int32_t* query_start = nullptr;   ///< [num_seqs + 1]
  const std::int32_t* block_tables = nullptr;  ///< [num_seqs x block_table_stride]
  int block_table_stride = 0;
  int num_logits = 0;
  const std::int32_t* logit_indices = nullptr; ///< [num_logits] flattened token indices
  // Named logit rows (prefill-only scoring): only these rows of the classifier are computed.
  int num_scored = 0;                                 ///< tokens whose named rows are wanted
  const std::int32_t* scored_indices = nullptr;       ///< [num_scored] flattened token indices
  int num_row_logits = 0;                             ///< (scored token, vocabulary row) pairs
  const std::int32_t* row_logit_positions = nullptr;  ///< [num_row_logits] index into scored_indices
  const std::int32_t* row_logit_ids = nullptr;        ///< [num_row_logits] vocabulary rows
  // Final hidden states (embeddings): output i is the final-normed state of flattened
  // token hidden_start[i], or the sum of those of the hidden_count[i] tokens from there.
  int num_hidden = 0;
  const std::int32_t* hidden_start = nullptr;  ///< [num_hidden] flattened token index
  const std::int32_t* hidden_count = nullptr;  ///< [num_hidden] tokens summed (1: one token's state)
  /// [num_tokens]: the LoRA adapter of each token (an index of llama_weights_view::adapters,
  /// -1: none); null: no token uses one.
  const std::int32_t* adapters = nullptr;
};

/// Scratch memory, grown on demand and reused across steps (no allocation in a step
/// once the largest batch has been seen).
struct llama_workspace {
  std::vector<float> x, q, k, v, attn, hb, hb2;
  std::vector<float> xb;  ///< per thread, [max(tokens, logits) x dim]
  std::vector<float> inv_freq, cos_table, sin_table;  ///< RoPE: [half], [n x half], [n x half]
  std::vector<float> local_inv_freq, local_cos, local_sin;  ///< the windowed layers' own (local_rope())
  std::vector<float> y;  ///< [tokens x dim]: an output normed before the residual (post_norms)
  std::vector<float> shared_gate;  ///< per thread, [tokens]: a shared expert's sigmoid gates
  std::vector<float> scores;                             ///< per thread, [max keys]
  std::vector<std::int32_t> seq_of_token;
  /// Inputs prepared for quantized products: per thread and input format, [rows x stride]
  /// (normalized rows, attention outputs); and hb's, shared, prepared by chunk owners.
  std::vector<std::byte> prepared, hb_prepared;
  std::int64_t prepared_stride = 0, hb_prepared_stride = 0;
  std::vector<float> row_scratch;  ///< one dequantized classifier row (scoring)
  /// LoRA: A x of each token for the projections of one stage, [targets x tokens x max rank].
  std::vector<float> lora_u;
  /// A mixture of experts: router logits [tokens x experts]; each token's chosen experts
  /// and gates [tokens x k]; the (token, choice) slots sorted by expert (slot_token, and
  /// slot_of its inverse); per expert its first slot; the normalized rows gathered in slot
  /// order, prepared for the experts' formats (gate's, then up's when it differs); their
  /// SwiGLU outputs prepared for W_down; and the experts' outputs [slots x dim].
  std::vector<float> router_logits, token_gate, slot_rows, expert_out;
  std::vector<std::int32_t> token_expert, slot_token, slot_of, expert_first, active_experts;
  std::vector<std::byte> slot_prepared, expert_hb_prepared;
  std::int64_t slot_prepared_stride = 0, expert_hb_prepared_stride = 0;
  /// Values prepared so far, per input format, by every thread: each input a step needs
  /// once per format (per thread where each thread prepares its own copy), whatever the
  /// number of matrices that read it.
  std::int64_t num_prepared_values[num_input_formats] = {};
};

/// The parts of a step that `stage_times` measures: the work of the team's first thread
/// in each stage, and its waits at the barriers between stages (load imbalance, and a
/// thread the OS did not run).
enum class forward_stage { embed, norm, qkv_rope, attention, attn_out, gate_up, down, logits, barrier_wait, count };
constexpr int num_forward_stages = int(forward_stage::count);
const char* to_string(forward_stage stage);

/// Wall-clock seconds per stage of the team's first thread, summed over layers and steps;
/// together they are the steps' time.
struct stage_times {
  std::array<double, num_forward_stages> seconds{};
  int num_steps = 0;
};

struct forward_options {
  const cpu_kernel_table* kernels = nullptr;  ///< null: the best table for this CPU
  int num_threads = 1;                        ///< the OpenMP team of the step
  stage_times* times = nullptr;               ///< null: no timing
};

/// Runs every layer over the batch, writes K/V into the cache,
/// `logits[num_logits x vocab]` for the requested tokens, `row_logits[num_row_logits]`
/// for the named rows and `hidden[num_hidden x dim]` for the hidden outputs. The whole step is one parallel region: linear layers split their
/// output rows, attention its (token, head) pairs, in chunks taken dynamically so that a
/// thread slowed by the machine's other work does not hold the others back.
void llama_forward(const llama_shape& shape, const llama_weights_view& weights,
                   const paged_kv_view& kv, const ragged_batch_view& batch,
                   llama_workspace& ws, float* logits, float* row_logits = nullptr,
                   const forward_options& options = {}, float* hidden = nullptr);

// ---- the individual kernels (CPU twins of kernels/cuda; plain loops and OpenBLAS,
// the step-by-step reference that the fused pass above and the CUDA kernels are tested against) ----

/// out[t] = table[ids[t]] for each of n tokens, rows of `dim`.
void embedding_gather(float* out, const float* table, const std::int32_t* ids, int n, int dim);
/// The same from a table of any weight type, each row dequantized with `kernels`.
void embedding_gather(float* out, const weight_view& table, const std::int32_t* ids, int n, int dim,
                      const cpu_kernel_table& kernels);
/// out[t] = x[t] / rms(x[t]) * w, for n rows of `dim` (out may be x: in place).
void rmsnorm(float* out, const float* x, const float* w, int n, int dim, float eps);
/// y[n x out] = x[n x in] * W^T with W [out x in] (+ bias when not null).
void linear(float* y, const float* x, const float* w, const float* bias, int n, int in, int out);
/// The same over W of any weight type: W dequantized row by row (the plain reference
/// the quantized products are compared with).
void linear(float* y, const float* x, const weight_view& w, const float* bias, int n, int in, int out,
            const cpu_kernel_table& kernels);
/// Rotates q [n x num_heads x head_dim] and k [n x num_kv_heads x head_dim] in place.
void rope(float* q, float* k, const std::int32_t* positions, int n, const llama_shape& shape);
/// Inverse frequency of pair i (Llama-3 scaling applied when configured).
float rope_inv_freq(int pair, const llama_shape& shape);
/// out[k] = classifier[row_ids[k]] . normed[positions[k]] for n (position, row) pairs:
/// only the named rows of the classifier (rows of `dim`; normed: final-normed hidden states).
void classifier_rows(float* out, const float* normed, const float* classifier, const std::int32_t* positions,
                     const std::int32_t* row_ids, int n, int dim);
/// Rotates one head in place by the angles of its pairs (cos_t, sin_t: [head_dim / 2]).
void rope_rotate_head(float* head, const float* cos_t, const float* sin_t, const llama_shape& shape);
/// The experts token rows choose: for each of n rows of `num_experts` router logits,
/// the `k` largest gates (softmax over all logits, or each logit's sigmoid) and, when
/// `normalize`, those k rescaled to sum to 1. experts / gates: [n x k], best first.
void route_experts(const float* logits, int n, int num_experts, int k, bool sigmoid, bool normalize,
                   std::int32_t* experts, float* gates);
/// gate[i] = silu(gate[i]) * up[i] over n values.
void silu_mul(float* gate, const float* up, std::int64_t n);
/// Scatters k/v rows [n x kv_dim] into the cache at slot_mapping.
void kv_write(float* k_cache, float* v_cache, const float* k, const float* v,
              const std::int32_t* slot_mapping, int n, int kv_dim);
/// The same into a cache of `type` (rows converted, rounding to nearest even).
void kv_write(std::byte* k_cache, std::byte* v_cache, kv_type type, const float* k, const float* v,
              const std::int32_t* slot_mapping, int n, int kv_dim);
/// Causal paged attention over a ragged batch: out [num_tokens x num_heads*head_dim].
void paged_attention(float* out, const float* q, const float* k_cache, const float* v_cache,
                     const ragged_batch_view& batch, int block_size, int num_heads,
                     int num_kv_heads, int head_dim);
/// The same over a cache of `type`, its elements read as floats.
void paged_attention(float* out, const float* q, const std::byte* k_cache, const std::byte* v_cache, kv_type type,
                     const ragged_batch_view& batch, int block_size, int num_heads, int num_kv_heads, int head_dim);

}  // namespace inflight::kernels::cpu
