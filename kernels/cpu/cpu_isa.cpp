#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::kernels::cpu {

bool can_run(cpu_isa isa) {
#if !defined(__x86_64__)
  return isa == cpu_isa::portable;
#else
  // libgcc's checks include the OS's support for the wider registers (xgetbv).
  switch (isa) {
    case cpu_isa::portable:
      return true;
    case cpu_isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case cpu_isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && can_run(cpu_isa::avx2);
  }
  return false;
#endif
}

cpu_isa detect_cpu_isa() {
  static const cpu_isa best = [] {
    if (can_run(cpu_isa::avx512)) return cpu_isa::avx512;
    if (can_run(cpu_isa::avx2)) return cpu_isa::avx2;
    return cpu_isa::portable;
  }();
  return best;
}

const char* to_string(cpu_isa isa) {
  switch (isa) {
    case cpu_isa::portable:
      return "portable";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx512:
      return "avx512";
  }
  return "unknown";
}

const cpu_kernel_table& kernels_for(cpu_isa isa) {
  switch (isa) {
    case cpu_isa::avx512:
      return avx512_kernels();
    case cpu_isa::avx2:
      return avx2_kernels();
    case cpu_isa::portable:
      break;
  }
  return portable_kernels();
}

}  // namespace inflight::kernels::cpu
