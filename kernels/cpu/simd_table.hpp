#pragma once
// What the kernel tables of the vector widths fill alike (kernels_avx2.cpp,
// kernels_avx512.cpp, kernels_avx512_vnni.cpp): each sets the kernels that have a body
// of width V to that body. Included only by those files, each compiled for its
// instruction set: internal linkage, like the bodies it names, so no code of one set
// can stand in for another's at link time.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_attention.hpp"
#include "kernels/cpu/simd_f32.hpp"
#include "kernels/cpu/simd_half.hpp"
#include "kernels/cpu/simd_prepare.hpp"
#include "kernels/cpu/simd_quantk.hpp"

namespace inflight::kernels::cpu {
namespace {

/// The f32 kernels, the f32 / f16 / bf16 products, input preparation and K/V stores.
template <class V>
void set_width_kernels(cpu_kernel_table& t) {
  t.gemm = f32_gemm<V>;
  t.attention = attention<V>;
  t.rmsnorm_row = f32_rmsnorm_row<V>;
  t.silu_mul = f32_silu_mul<V>;
  t.gelu_mul = f32_gelu_mul<V>;
  t.swiglu_oai_mul = f32_swiglu_oai_mul<V>;
  t.weights[int(weight_type::f32)].gemm = f32_typed_gemm<V>;
  t.weights[int(weight_type::f16)].gemm = half_gemm<V, f16_loads<V>>;
  t.weights[int(weight_type::bf16)].gemm = half_gemm<V, bf16_loads<V>>;
  t.prepare[int(input_format::bf16)] = simd_prepare_bf16<V>;
  t.prepare[int(input_format::q8_0)] = simd_prepare_q8<V, 32, 32>;
  t.prepare[int(input_format::q8_k)] = simd_prepare_q8<V, 256, 16>;
  t.store_kv[int(kv_type::f16)] = simd_store_kv_f16<V>;
  t.store_kv[int(kv_type::bf16)] = simd_store_kv_bf16<V>;
}

/// The products of the block-quantized types: the 32-value formats by gemm32 of width V,
/// the K-quants by `k_gemm.template operator()<type>()` (the kernel each table picks for
/// them: gemm_k, or gemm_k_by_tokens where the width has it).
template <class V, class KGemm>
void set_block_gemms(cpu_kernel_table& t, KGemm k_gemm) {
  t.weights[int(weight_type::q8_0)].gemm = gemm32<V, q8_0_format>;
  t.weights[int(weight_type::q4_0)].gemm = gemm32<V, q4_0_format>;
  t.weights[int(weight_type::q5_0)].gemm = gemm32<V, q5_0_format>;
  t.weights[int(weight_type::q4_k)].gemm = k_gemm.template operator()<k_type::q4_k>();
  t.weights[int(weight_type::q5_k)].gemm = k_gemm.template operator()<k_type::q5_k>();
  t.weights[int(weight_type::q6_k)].gemm = k_gemm.template operator()<k_type::q6_k>();
  t.weights[int(weight_type::q2_k)].gemm = k_gemm.template operator()<k_type::q2_k>();
  t.weights[int(weight_type::q3_k)].gemm = k_gemm.template operator()<k_type::q3_k>();
}

}  // namespace
}  // namespace inflight::kernels::cpu
#endif
