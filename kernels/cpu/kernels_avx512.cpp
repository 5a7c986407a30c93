// The kernel table for CPUs with AVX-512 F, VL, DQ and BW. Compiled for that
// instruction set (kernels/CMakeLists.txt) and reached only through avx512_kernels()
// after a CPU check: it includes only headers of intrinsics, declarations and
// internal-linkage templates, so the linker can pick none of its code for baseline code.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512.hpp"
#include "kernels/cpu/simd_gemv_k.hpp"
#include "kernels/cpu/simd_table.hpp"

namespace inflight::kernels::cpu {

const cpu_kernel_table& avx512_kernels() {
  using V = avx512_traits;
  static const cpu_kernel_table table = [] {
    cpu_kernel_table t = portable_kernels();  // what this file does not vectorize
    t.isa = cpu_isa::avx512;
    set_width_kernels<V>(t);
    set_block_gemms<V>(t, []<k_type K> { return gemm_k_by_tokens<V, K>; });
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
