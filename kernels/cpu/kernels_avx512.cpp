// The kernel table for CPUs with AVX-512 F, VL, DQ and BW. Compiled for that
// instruction set (kernels/CMakeLists.txt) and reached only through avx512_kernels()
// after a CPU check: it includes only headers of intrinsics, declarations and
// internal-linkage templates, so the linker can pick none of its code for baseline code.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512.hpp"
#include "kernels/cpu/simd_attention.hpp"
#include "kernels/cpu/simd_f32.hpp"

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
