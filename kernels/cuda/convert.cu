// fp32 <-> bf16/fp16 conversion (weight upload, tests).
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void from_f32_kernel(T* dst, const float* src, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = detail::from_float<T>(src[i]);
  }
}

template <class T>
__global__ void to_f32_kernel(float* dst, const T* src, std::int64_t n) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = detail::to_float(src[i]);
  }
}

// Grid-stride loops: a bounded grid covers any n.
unsigned grid_for(std::int64_t n) {
  const std::int64_t blocks = (n + 255) / 256;
  return unsigned(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

}  // namespace

status convert_from_f32(dtype dt, void* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    from_f32_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<T*>(dst), src, n);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

status convert_to_f32(dtype dt, float* dst, const void* src, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    to_f32_kernel<T><<<grid_for(n), 256, 0, stream>>>(dst, static_cast<const T*>(src), n);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
