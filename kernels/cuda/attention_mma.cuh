#pragma once
// Tensor-core pieces shared by the mma attention kernels: one mma.sync m16n8k16 (16-bit
// inputs, fp32 accumulators), register packing, and the asynchronous 16-byte copies
// (cp.async, sm_80+) that fill their K/V tiles without passing through registers.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit inputs), g = lane / 4, t = lane % 4:
//   A (16 x 16, row-major): reg0 = (row g,   cols 2t, 2t+1)   reg1 = (row g+8, cols 2t, 2t+1)
//                           reg2 = (row g,   cols 2t+8, +9)   reg3 = (row g+8, cols 2t+8, +9)
//   B (16 x 8, k x n):      reg0 = (k 2t, 2t+1; n g)          reg1 = (k 2t+8, 2t+9; n g)
//   C (16 x 8, fp32):       c0, c1 = (row g, cols 2t, 2t+1)   c2, c3 = (row g+8, cols 2t, 2t+1)

#include "kernels/cuda/attention_common.cuh"

namespace inflight::kernels::cuda::detail {

template <class T>
struct mma_op;
template <>
struct mma_op<__nv_bfloat16> {
  __device__ __forceinline__ static void run(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct mma_op<__half> {
  __device__ __forceinline__ static void run(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

/// Two floats as one register of two 16-bit values (lo in the low half).
template <class T>
__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  const detail::pair_t<T> p = detail::from_float2<T>(make_float2(lo, hi));
  return *reinterpret_cast<const std::uint32_t*>(&p);
}

/// Two 16-bit values from two places as one register (lo in the low half).
template <class T>
__device__ __forceinline__ std::uint32_t pack_halves(const T* lo, const T* hi) {
  const std::uint32_t l = *reinterpret_cast<const unsigned short*>(lo);
  const std::uint32_t h = *reinterpret_cast<const unsigned short*>(hi);
  return l | (h << 16);
}

/// Starts a 16-byte copy global -> shared; `valid` false writes 16 zero bytes and reads
/// nothing (gmem must still be a valid address).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
}

/// Waits for this thread's cp.async copies (then __syncthreads() for the block's).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

}  // namespace inflight::kernels::cuda::detail
