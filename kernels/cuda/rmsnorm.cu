// Residual add fused with RMSNorm: one block per row, the sum of squares in fp32.
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int threads = 256;

template <class T>
__global__ void add_rmsnorm_kernel(T* out, float* x, const T* delta, const float* w, const std::int32_t* rows,
                                   int dim, float eps, bool write_back) {
  __shared__ float scratch[32];
  const std::int64_t i = blockIdx.x;
  const std::int64_t r = rows != nullptr ? rows[i] : i;
  float* xr = x + r * dim;
  const T* dr = delta != nullptr ? delta + r * dim : nullptr;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    float v = xr[c];
    if (dr != nullptr) v += detail::to_float(dr[c]);
    if (write_back) xr[c] = v;
    ss += v * v;
  }
  // Each thread re-reads only the columns it wrote itself, so no barrier is needed for x.
  const float total = detail::block_sum(ss, scratch);
  const float scale = rsqrtf(total / float(dim) + eps);
  T* o = out + i * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) {
    float v = xr[c];
    if (!write_back && dr != nullptr) v += detail::to_float(dr[c]);
    o[c] = detail::from_float<T>(w[c] * (scale * v));
  }
}

}  // namespace

status add_rmsnorm(dtype dt, void* out, float* x, const void* delta, const float* w, const std::int32_t* rows, int n,
                   int dim, float eps, bool write_back, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    add_rmsnorm_kernel<T><<<n, threads, 0, stream>>>(static_cast<T*>(out), x, static_cast<const T*>(delta), w, rows,
                                                     dim, eps, write_back);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
