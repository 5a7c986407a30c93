// Bias add on the fused qkv rows (Qwen2-style attention biases).
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void add_bias_kernel(T* y, const float* bias, int width, int row_stride) {
  T* row = y + std::int64_t(blockIdx.x) * row_stride;
  for (int c = threadIdx.x; c < width; c += blockDim.x) row[c] = detail::from_float<T>(detail::to_float(row[c]) + bias[c]);
}

}  // namespace

status add_bias(dtype dt, void* y, const float* bias, int n, int width, int row_stride, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    add_bias_kernel<T><<<n, 256, 0, stream>>>(static_cast<T*>(y), bias, width, row_stride);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
