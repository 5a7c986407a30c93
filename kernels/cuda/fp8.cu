// FP8 E4M3 conversions (fp8.hpp): the per-tensor scale and the saturating conversion.
#include <cuda_fp8.h>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/fp8.hpp"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__device__ __forceinline__ float load_as_float(const T* x, std::int64_t i) {
  if constexpr (std::is_same_v<T, float>) {
    return x[i];
  } else {
    return detail::to_float(x[i]);
  }
}

/// amax as the bits of a non-negative float: atomicMax on the bits orders them as floats.
template <class T>
__global__ void abs_max_kernel(const T* x, std::int64_t n, unsigned* amax_bits) {
  __shared__ float scratch[32];
  float m = 0.0f;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    m = fmaxf(m, fabsf(load_as_float(x, i)));
  }
  m = detail::warp_max(m);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) scratch[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < int(blockDim.x / 32) ? scratch[lane] : 0.0f;
    m = detail::warp_max(m);
    if (lane == 0) atomicMax(amax_bits, __float_as_uint(m));
  }
}

__global__ void scale_kernel(const float* amax, float* scale) {
  const float a = *amax;
  *scale = a > 0.0f ? __fdiv_rn(a, 448.0f) : 1.0f;
}

template <class T>
__global__ void to_fp8_kernel(const T* x, std::int64_t n, const float* scale, std::uint8_t* out) {
  const float s = *scale;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    out[i] = __nv_cvt_float_to_fp8(__fdiv_rn(load_as_float(x, i), s), __NV_SATFINITE, __NV_E4M3);
  }
}

template <class F>
status dispatch_source(fp8_source type, F&& f) {
  switch (type) {
    case fp8_source::f16: return f(__half{});
    case fp8_source::f32: return f(float{});
    default: return f(__nv_bfloat16{});
  }
}

unsigned grid_for(std::int64_t n) { return unsigned(std::min<std::int64_t>(detail::blocks_for(n, 256), 4096)); }

}  // namespace

status fp8_scale(fp8_source type, const void* x, std::int64_t n, float* amax, float* scale, cudaStream_t stream) {
  INFLIGHT_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), stream));
  if (n > 0) {
    INFLIGHT_TRY_STATUS(dispatch_source(type, [&](auto tag) {
      using T = decltype(tag);
      abs_max_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<const T*>(x), n, reinterpret_cast<unsigned*>(amax));
      INFLIGHT_CUDA_CHECK_LAUNCH();
      return status::ok();
    }));
  }
  scale_kernel<<<1, 1, 0, stream>>>(amax, scale);
  INFLIGHT_CUDA_CHECK_LAUNCH();
  return status::ok();
}

status to_fp8(fp8_source type, const void* x, std::int64_t n, const float* scale, std::uint8_t* out,
              cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return dispatch_source(type, [&](auto tag) {
    using T = decltype(tag);
    to_fp8_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<const T*>(x), n, scale, out);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
