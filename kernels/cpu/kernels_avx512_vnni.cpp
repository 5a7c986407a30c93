// The kernel table for CPUs with AVX-512 VNNI and BF16 on top of the avx512 table:
// integer dot products (vpdpbusd) for the quantized types and bf16 ones (vdpbf16ps).
// The f32 kernels are the avx512 table's own, so f32 results are the same bits.
// Compiled for that instruction set and reached only after a CPU check.
#include "kernels/cpu/cpu_isa.hpp"

#if defined(__x86_64__)
#include "kernels/cpu/simd_avx512.hpp"

namespace inflight::kernels::cpu {

const cpu_kernel_table& avx512_vnni_kernels() {
  static const cpu_kernel_table table = [] {
    cpu_kernel_table t = avx512_kernels();
    t.isa = cpu_isa::avx512_vnni;
    return t;
  }();
  return table;
}

}  // namespace inflight::kernels::cpu

#else  // other architectures: never selected (can_run is false)

namespace inflight::kernels::cpu {
const cpu_kernel_table& avx512_vnni_kernels() { return portable_kernels(); }
}  // namespace inflight::kernels::cpu

#endif
