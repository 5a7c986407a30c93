#pragma once
/// CPU twins of the fused CUDA kernels that have no counterpart in llama.hpp
/// (kernels/cuda/kernels.hpp), in fp32: the reference their [gpu] tests compare with.

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/weight_types.hpp"

namespace inflight::kernels::cpu {

/// Residual add + RMSNorm. Row i reads r = rows ? rows[i] : i: v = x[r] + delta[r]
/// (delta may be null), x[r] = v when write_back, out[i] = w * (v / rms(v)).
void add_rmsnorm(float* out, float* x, const float* delta, const float* w, const std::int32_t* rows, int n, int dim,
                 float eps, bool write_back);

/// y[t][c] += bias[c] for c < width over n rows of `row_stride`.
void add_bias(float* y, const float* bias, int n, int width, int row_stride);

/// out[t][i] = silu(gate_up[t][i]) * gate_up[t][hidden + i] (the fused gate/up layout).
void silu_mul_fused(float* out, const float* gate_up, int n, int hidden);

/// Qwen3's q/k norm on the fused qkv rows (layout in kernels/cuda/kernels.hpp): in
/// place, each head of q (columns [0, num_heads*head_dim)) gets RMSNorm with q_norm,
/// each head of k (the next num_kv_heads*head_dim columns) with k_norm; v is untouched.
void qk_norm(float* qkv, int row_stride, const float* q_norm, const float* k_norm, int n, int num_heads,
             int num_kv_heads, int head_dim, float eps);

/// Decode attention the way the CUDA decode kernels cut it (attention_decode.cu): each
/// sequence's keys in splits of `split_size`, one (max, sum, unnormalised row) per
/// (sequence, head, split) with the online softmax in pieces of 32 keys, then the merge
/// of the used splits. One query token per sequence (query_start[s]); out as
/// paged_attention's. Splits past num_splits are an error the caller must prevent.
void decode_attention_split(float* out, const float* q, const float* k_cache, const float* v_cache,
                            const std::int32_t* positions, const std::int32_t* query_start,
                            const std::int32_t* block_tables, int block_table_stride, int num_seqs, int block_size,
                            int num_heads, int num_kv_heads, int head_dim, int split_size);

/// Arg-max of each of n rows (ties to the lowest id) and its log-softmax.
void greedy_rows(const float* logits, int n, int vocab, std::int32_t* tokens, float* logprobs);

/// The CUDA quant_gemv (kernels/cuda/quant_matmul.hpp) operation by operation: per
/// output row, 32 lanes over the row's 32-value units (lane l: units l, l + 32, ...), each
/// unit's exact integer sums folded into the lane's fp32 sum with the kernel's fused
/// multiply-adds, then the butterfly over the lanes. The levels are read through dtypes'
/// definitions, not the kernel's packed words. y[t * ldy + o] for n prepared rows of
/// input_of(w.type)'s format (x_row_bytes apart); q8_0, q4_0, q4_k and q6_k only.
void quant_gemv_twin(const weight_view& w, int rows, int cols, const std::byte* x_prepared, std::int64_t x_row_bytes,
                     int n, float* y, std::int64_t ldy);

/// The CUDA fp8 conversion (kernels/cuda/fp8.hpp) of n values with one scale: returns
/// scale = max |x| / 448 (1 when all are 0) and sets out[i] = e4m3(x[i] / scale).
float fp8_quantize(const float* x, std::int64_t n, std::uint8_t* out);

/// y[t][o] = (sx * x8[t]) . (sw * w8[o]) in double, rounded once: the exact value the
/// CUDA fp8 product approximates (its accumulation order is cuBLASLt's).
void fp8_linear_twin(const std::uint8_t* x8, float sx, const std::uint8_t* w8, float sw, int n, int in, int out,
                     float* y);

}  // namespace inflight::kernels::cpu
