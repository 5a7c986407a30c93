#include "kernels/cpu/cpu_isa.hpp"

#include <initializer_list>

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
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case cpu_isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && can_run(cpu_isa::avx2);
    case cpu_isa::avx512_vnni:
      return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") && can_run(cpu_isa::avx512);
  }
  return false;
#endif
}

cpu_isa detect_cpu_isa() {
  static const cpu_isa best = [] {
    for (auto isa : {cpu_isa::avx512_vnni, cpu_isa::avx512, cpu_isa::avx2}) {
      if (can_run(isa)) return isa;
    }
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
    case cpu_isa::avx512_vnni:
      return "avx512_vnni";
  }
  return "unknown";
}

const cpu_kernel_table& kernels_for(cpu_isa isa) {
  switch (isa) {
    case cpu_isa::avx512_vnni:
      return avx512_vnni_kernels();
    case cpu_isa::avx512:
      return avx512_kernels();
    case cpu_isa::avx2:
      return avx2_kernels();
    case cpu_isa::portable:
      break;
  }
  return portable_kernels();
}

void typed_gemm(const cpu_kernel_table& table, const typed_gemm_args& a, int row_begin, int row_end) {
  table.weights[int(a.w.type)].gemm(a, row_begin, row_end);
}

}  // namespace inflight::kernels::cpu
