// Embedding gather: one block per token copies its table row into the fp32 residual.
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void embedding_kernel(float* x, const T* table, const std::int32_t* ids, int dim) {
  const std::int64_t t = blockIdx.x;
  const T* row = table + std::int64_t(ids[t]) * dim;
  float* out = x + t * dim;
  for (int i = threadIdx.x; i < dim; i += blockDim.x) out[i] = detail::to_float(row[i]);
}

}  // namespace

status embedding_gather(dtype dt, float* x, const void* table, const std::int32_t* ids, int n, int dim,
                        cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    embedding_kernel<T><<<n, 256, 0, stream>>>(x, static_cast<const T*>(table), ids, dim);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
