#pragma once
/// The portable (plain C++) kernels of the non-f32 weight types and of the input
/// formats: the twins every vector table is tested against. Every product computes, for
/// each (row, token), exact integer block sums and then one chain over the blocks in
/// order (see quant_portable.cpp), the chain the vector tables compute with fused
/// multiply-adds.

#include "dtypes/dequantize.hpp"
#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {

/// Fills t's entries for f16, bf16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, mxfp4,
/// q2_k, q3_k, q4_k, q5_k, q6_k (the vector tables keep these for the types they do not
/// vectorize: q4_1, q5_1, iq4_nl, iq4_xs, mxfp4), the input formats bf16, q8_0, q8_k and
/// the KV types f16, bf16.
void add_portable_quant_kernels(cpu_kernel_table& t);

}  // namespace inflight::kernels::cpu
