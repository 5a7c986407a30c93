#pragma once
/// The portable (plain C++) kernels of the non-f32 weight types and of the input
/// formats: the twins every vector table is tested against. Every product computes, for
/// each (row, token), exact integer block sums and then one chain over the blocks in
/// order (see quant_portable.cpp), the chain the vector tables compute with fused
/// multiply-adds.

#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {

/// Fills t's entries for f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, the input formats
/// bf16, q8_0, q8_k and the KV types f16, bf16.
void add_portable_quant_kernels(cpu_kernel_table& t);

// The row conversions on their own (the vector tables reuse them).
void dequantize_row_f16(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_bf16(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q8_0(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q4_0(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q5_0(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q4_k(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q5_k(const std::byte* row, float* out, std::int64_t k);
void dequantize_row_q6_k(const std::byte* row, float* out, std::int64_t k);

/// The half stored at p (no alignment assumed), as a float.
float load_fp16(const std::byte* p);

}  // namespace inflight::kernels::cpu
