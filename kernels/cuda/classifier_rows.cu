// Named rows of the classifier (prefill-only scoring): one warp per (token, row) pair
// computes one dot product, instead of a GEMM over the whole vocabulary.
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int warps_per_block = 4;

template <class T>
__global__ void classifier_rows_kernel(float* out, const T* normed, const T* classifier, const std::int32_t* positions,
                                       const std::int32_t* row_ids, int n, int dim) {
  const int k = blockIdx.x * warps_per_block + threadIdx.x / 32;
  if (k >= n) return;
  const int lane = threadIdx.x % 32;
  const T* h = normed + std::int64_t(positions[k]) * dim;
  const T* w = classifier + std::int64_t(row_ids[k]) * dim;
  float dot = 0.0f;
  for (int c = lane; c < dim; c += 32) dot += detail::to_float(w[c]) * detail::to_float(h[c]);
  dot = detail::warp_sum(dot);
  if (lane == 0) out[k] = dot;
}

}  // namespace

status classifier_rows(dtype dt, float* out, const void* normed, const void* classifier, const std::int32_t* positions,
                       const std::int32_t* row_ids, int n, int dim, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    classifier_rows_kernel<T><<<detail::blocks_for(n, warps_per_block), warps_per_block * 32, 0, stream>>>(
        out, static_cast<const T*>(normed), static_cast<const T*>(classifier), positions, row_ids, n, dim);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
