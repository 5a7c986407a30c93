#pragma once
/// CPU twins of the fused CUDA kernels that have no counterpart in llama.hpp
/// (kernels/cuda/kernels.hpp), in fp32: the reference their [gpu] tests compare with.

#include <cstdint>

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

/// Arg-max of each of n rows (ties to the lowest id) and its log-softmax.
void greedy_rows(const float* logits, int n, int vocab, std::int32_t* tokens, float* logprobs);

}  // namespace inflight::kernels::cpu
