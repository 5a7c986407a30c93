#pragma once
// Device helpers shared by the .cu files: storage-type traits, warp and block
// reductions, and the dtype -> template dispatch.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/kernels.hpp"

namespace inflight::kernels::cuda::detail {

template <class T>
struct pair_of;
template <>
struct pair_of<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
template <>
struct pair_of<__half> {
  using type = __half2;
};
template <class T>
using pair_t = typename pair_of<T>::type;

__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
__device__ __forceinline__ float2 to_float2(__half2 v) { return __half22float2(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <class T>
__device__ __forceinline__ pair_t<T> from_float2(float2 v);
template <>
__device__ __forceinline__ __nv_bfloat162 from_float2<__nv_bfloat16>(float2 v) { return __float22bfloat162_rn(v); }
template <>
__device__ __forceinline__ __half2 from_float2<__half>(float2 v) { return __float22half2_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
/// `scratch` holds 32 floats; the call ends with the scratch free for reuse.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < num_warps ? scratch[lane] : 0.0f;
  total = warp_sum(total);
  __syncthreads();
  return total;
}

/// Calls f(T{}) with T the storage type of `dt`.
template <class F>
status dispatch(dtype dt, F&& f) {
  if (dt == dtype::f16) return f(__half{});
  return f(__nv_bfloat16{});
}

inline unsigned blocks_for(std::int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace inflight::kernels::cuda::detail
