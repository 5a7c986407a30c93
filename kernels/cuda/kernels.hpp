#pragma once
/// The CUDA kernels of the Llama forward pass, as host functions that launch on a
/// stream. Raw device pointers in; activations and weights are bf16 or fp16 (`dtype`),
/// the residual stream, norms' weights and logits fp32, and every sum accumulates in
/// fp32. Each function checks its launch and returns a status (never exits).
/// CPU twins: kernels/cpu/llama.hpp and kernels/cpu/twins.hpp.
///
/// The fused projections keep one row per token:
///
///   qkv row:      | q: num_heads*head_dim | k: kv_dim | v: kv_dim |   (row_stride = q_dim + 2*kv_dim)
///   gate_up row:  | gate: hidden | up: hidden |

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/status.hpp"

namespace inflight::kernels::cuda {

/// Storage type of weights, activations and the KV cache.
enum class dtype { bf16, f16 };

inline std::size_t dtype_bytes(dtype) { return 2; }

/// dst[i] = (T)src[i] over n values (weight upload, tests).
status convert_from_f32(dtype dt, void* dst, const float* src, std::int64_t n, cudaStream_t stream);
/// dst[i] = (float)src[i] over n values.
status convert_to_f32(dtype dt, float* dst, const void* src, std::int64_t n, cudaStream_t stream);

/// x[t] = table[ids[t]] (rows of `dim`, table in `dt`, x fp32).
status embedding_gather(dtype dt, float* x, const void* table, const std::int32_t* ids, int n, int dim,
                        cudaStream_t stream);

/// Fused residual add + RMSNorm over n rows. Row i reads r = rows ? rows[i] : i:
///   v = x[r] + delta[r] (delta may be null), x[r] = v when write_back,
///   out[i] = w * (v / rms(v)).
status add_rmsnorm(dtype dt, void* out, float* x, const void* delta, const float* w, const std::int32_t* rows,
                   int n, int dim, float eps, bool write_back, cudaStream_t stream);

/// y[t][c] += bias[c] for c < width, rows of `row_stride` (the q/k/v biases on qkv).
status add_bias(dtype dt, void* y, const float* bias, int n, int width, int row_stride, cudaStream_t stream);

/// Qwen3's q/k norm, in place on the qkv rows (before RoPE): each head of q gets
/// RMSNorm with q_norm[head_dim], each head of k with k_norm; v is untouched.
/// CPU twin: kernels::cpu::qk_norm.
status qk_norm(dtype dt, void* qkv, int row_stride, const float* q_norm, const float* k_norm, int n, int num_heads,
               int num_kv_heads, int head_dim, float eps, cudaStream_t stream);

/// Rotates q (columns [0, num_heads*head_dim)) and k (the next num_kv_heads*head_dim
/// columns) of each qkv row in place. inv_freq[head_dim/2] comes from
/// kernels::cpu::rope_inv_freq, so Llama-3 scaling matches the CPU.
status rope(dtype dt, void* qkv, int row_stride, const std::int32_t* positions, const float* inv_freq, int n,
            int num_heads, int num_kv_heads, int head_dim, bool interleaved, cudaStream_t stream);

/// out[t][i] = silu(gate_up[t][i]) * gate_up[t][hidden + i].
status silu_mul(dtype dt, void* out, const void* gate_up, int n, int hidden, cudaStream_t stream);

/// Scatters each token's k (columns [k_offset, k_offset+kv_dim)) and v (from v_offset)
/// of `src` rows into the caches at slot_mapping[t] (cache row = slot * kv_dim).
status kv_write(dtype dt, void* k_cache, void* v_cache, const void* src, int row_stride, int k_offset,
                int v_offset, const std::int32_t* slot_mapping, int n, int kv_dim, cudaStream_t stream);

/// Paged attention over a ragged batch (see kernels/cpu/llama.hpp): token t of sequence
/// s attends to keys 0..positions[t] read through block table row s. GQA: query head h
/// reads kv head h / (num_heads / num_kv_heads). head_dim even and <= 256.
struct attention_args {
  dtype dt = dtype::bf16;
  void* out = nullptr;            ///< [num_tokens x num_heads*head_dim]
  const void* q = nullptr;        ///< row t at q + t*q_stride
  int q_stride = 0;
  const void* k_cache = nullptr;  ///< [blocks][block_size][num_kv_heads][head_dim]
  const void* v_cache = nullptr;
  const std::int32_t* positions = nullptr;
  const std::int32_t* query_start = nullptr;  ///< [num_seqs + 1]
  const std::int32_t* block_tables = nullptr;
  int block_table_stride = 0;
  int num_tokens = 0;
  int num_seqs = 0;
  int block_size = 16;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float scale = 1.0f;             ///< 1/sqrt(head_dim)
  /// Decode only: row i of the launch is sequence decode_seqs[i] (null: sequence i), so
  /// the one-query sequences of a mixed step run here while the others take prefill
  /// tiles. num_seqs is then the number of rows.
  const std::int32_t* decode_seqs = nullptr;
};

inline constexpr int max_head_dim = 256;

/// Scratch of the split-K decode: per (sequence, head, split) a running max, a sum and
/// an unnormalised output row.
struct decode_partials {
  float* out = nullptr;  ///< [rows][num_heads][num_splits][head_dim]
  float* max = nullptr;  ///< [num_seqs][num_heads][num_splits]
  float* sum = nullptr;
  int num_splits = 1;    ///< the grid's splits per sequence (and the partials' stride)
  int split_size = 0;    ///< keys per split; num_splits * split_size covers every context
  /// When set, the split size is read from this device int instead (a graph replays
  /// the same launch while each step chooses its own size; see decode_split.hpp).
  const std::int32_t* split_size_dev = nullptr;
};

/// Floats a decode_partials needs for these sizes (out + max + sum).
std::int64_t decode_partials_floats(int num_seqs, int num_heads, int head_dim, int num_splits);

/// The partials of `num_rows` rows and `num_splits` splits laid out from `base` (at least
/// decode_partials_floats(num_rows, num_heads, head_dim, num_splits) floats).
inline decode_partials decode_partials_at(float* base, int num_rows, int num_heads, int head_dim, int num_splits) {
  const std::int64_t rows = std::int64_t(num_rows) * num_heads * num_splits;
  decode_partials p;
  p.num_splits = num_splits;
  p.out = base;
  p.max = base + rows * head_dim;
  p.sum = p.max + rows;
  return p;
}

/// Which decode kernel runs.
enum class decode_kernel {
  /// One block per (sequence, kv head, split) computing every query head of that kv
  /// head: each K/V row is read once per group.
  grouped,
  /// One block per (sequence, query head, split): each K/V row is read once per query
  /// head (kept for comparison).
  per_head,
  /// Tensor cores: one block per (sequence, kv head, split), the group's query heads as
  /// the rows of an mma tile, K/V tiles read whole into shared memory; head_dim 64, 96
  /// or 128 and groups of at most 16 heads (other shapes take `grouped`).
  mma,
};

/// Whether the tensor-core decode kernel takes this head shape.
bool attention_decode_mma_supports(const attention_args& args);
/// The tensor-core decode kernel's splits alone (attention_decode adds the merge).
status attention_decode_mma_splits(const attention_args& args, const decode_partials& partials, cudaStream_t stream);

/// Decode (flash-decoding): sequence s has one query token, query_start[s] (any
/// sequence with one query token: a decode, or a one-token prompt chunk). Its keys
/// are cut into splits, each block reduces one split, a second kernel merges them.
/// The grid depends only on num_seqs and num_splits, so it can be captured in a graph.
status attention_decode(const attention_args& args, const decode_partials& partials, cudaStream_t stream,
                        decode_kernel kernel = decode_kernel::grouped);

/// Query tokens per prefill tile.
inline constexpr int prefill_tile_tokens = 16;

/// Which prefill kernel runs.
enum class prefill_kernel {
  /// CUDA cores: a block per (tile, query head), one lane per key of a 32-key tile.
  tiled,
  /// Tensor cores (mma.sync): a block per (tile, kv head), a warp per query head of it;
  /// head_dim 64, 96 or 128 (other shapes fall back to `tiled`).
  mma,
};

/// Prefill / mixed batches (FlashAttention-style online softmax over key tiles, no
/// score matrix). Only the tiles listed are computed: a mixed step lists the tiles of its
/// multi-token sequences and sends its one-token rows to attention_decode.
/// tiles[3*i..3*i+2] = {sequence, first token, end token} with at most
/// prefill_tile_tokens tokens of one sequence.
status attention_prefill(const attention_args& args, const std::int32_t* tiles, int num_tiles,
                         cudaStream_t stream, prefill_kernel kernel = prefill_kernel::tiled);

/// Whether the tensor-core prefill kernel takes this head shape.
bool attention_prefill_mma_supports(const attention_args& args);
/// The tensor-core prefill kernel alone (an error for a shape it does not take).
status attention_prefill_mma(const attention_args& args, const std::int32_t* tiles, int num_tiles,
                             cudaStream_t stream);

/// Named classifier rows (prefill-only scoring): out[k] = classifier[row_ids[k]] .
/// normed[positions[k]] for n pairs; normed and classifier rows of `dim` in `dt`, out
/// fp32. CPU twin: kernels::cpu::classifier_rows.
status classifier_rows(dtype dt, float* out, const void* normed, const void* classifier, const std::int32_t* positions,
                       const std::int32_t* row_ids, int n, int dim, cudaStream_t stream);

/// Greedy sampling of each logits row: tokens[r] = arg-max (ties to the lowest id),
/// logprobs[r] = its log-softmax.
status greedy_sample(const float* logits, int num_rows, int vocab, std::int32_t* tokens, float* logprobs,
                     cudaStream_t stream);

/// Greedy sampling under a grammar's mask: for k < num_rows, logits row rows[k] among the
/// tokens that masks[k * words ..] allows (bit i % 64 of word i / 64; tokens past
/// words * 64 are not allowed), ties to the lowest id, none allowed = token 0;
/// logprobs[k] is the chosen token's log-softmax over the whole row. CPU twin: core's
/// sample() of a greedy row whose only processor is the mask (greedy_allowed_token).
status masked_greedy_sample(const float* logits, const std::int32_t* rows, int num_rows, int vocab,
                            const std::uint64_t* masks, int words, std::int32_t* tokens, float* logprobs,
                            cudaStream_t stream);

}  // namespace inflight::kernels::cuda
