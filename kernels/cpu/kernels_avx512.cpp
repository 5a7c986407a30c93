// The kernel table for CPUs with AVX-512 F, VL, DQ and BW. Compiled for that
// instruction set (kernels/CMakeLists.txt) and reached only through avx512_kernels()
// after a CPU check: it includes only headers of intrinsics, declarations and
// internal-linkage templates, so the linker can pick none of its code for baseline code.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512.hpp"
#include "kernels/cpu/simd_attention.hpp"
#include "kernels/cpu/simd_f32.hpp"
#include "kernels/cpu/simd_half.hpp"
#include "kernels/cpu/simd_prepare.hpp"
#include "kernels/cpu/simd_gemv_k.hpp"

namespace inflight::kernels::cpu {

const cpu_kernel_table& avx512_kernels() {
  using V = avx512_traits;
  static const cpu_kernel_table table = [] {
    cpu_kernel_table t = portable_kernels();  // what this file does not vectorize
    t.isa = cpu_isa::avx512;
    t.gemm = f32_gemm<V>;
    t.attention = attention<V>;
    t.rmsnorm_row = f32_rmsnorm_row<V>;
    t.silu_mul = f32_silu_mul<V>;
    t.weights[int(weight_type::f32)].gemm = f32_typed_gemm<V>;
    t.weights[int(weight_type::f16)].gemm = half_gemm<V, f16_loads<V>>;
    t.weights[int(weight_type::bf16)].gemm = half_gemm<V, bf16_loads<V>>;
    t.weights[int(weight_type::q8_0)].gemm = gemm32<V, q8_0_format>;
    t.weights[int(weight_type::q4_0)].gemm = gemm32<V, q4_0_format>;
    t.weights[int(weight_type::q5_0)].gemm = gemm32<V, q5_0_format>;
    t.weights[int(weight_type::q4_k)].gemm = gemm_k_by_tokens<V, k_type::q4_k>;
    t.weights[int(weight_type::q5_k)].gemm = gemm_k_by_tokens<V, k_type::q5_k>;
    t.weights[int(weight_type::q6_k)].gemm = gemm_k_by_tokens<V, k_type::q6_k>;
    t.prepare[int(input_format::bf16)] = simd_prepare_bf16<V>;
    t.prepare[int(input_format::q8_0)] = simd_prepare_q8<V, 32, 32>;
    t.prepare[int(input_format::q8_k)] = simd_prepare_q8<V, 256, 16>;
    t.store_kv[int(kv_type::f16)] = simd_store_kv_f16<V>;
    t.store_kv[int(kv_type::bf16)] = simd_store_kv_bf16<V>;
    return t;
  }();
  return table;
}

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx512_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
