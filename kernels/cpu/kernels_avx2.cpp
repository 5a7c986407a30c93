// The kernel table for CPUs with AVX2, FMA and F16C (no AVX-512). Compiled for that
// instruction set (kernels/CMakeLists.txt) and reached only through avx2_kernels()
// after a CPU check: it includes only headers of intrinsics, declarations and
// internal-linkage templates, so the linker can pick none of its code for baseline code.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx2.hpp"
#include "kernels/cpu/simd_table.hpp"

namespace inflight::kernels::cpu {

const cpu_kernel_table& avx2_kernels() {
  using V = avx2_traits;
  static const cpu_kernel_table table = [] {
    cpu_kernel_table t = portable_kernels();  // what this file does not vectorize
    t.isa = cpu_isa::avx2;
    set_width_kernels<V>(t);
    set_block_gemms<V>(t, []<k_type K> { return gemm_k<V, K>; });
    return t;
  }();
  return table;
}

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx2_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
