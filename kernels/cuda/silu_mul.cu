// SwiGLU: silu(gate) * up from the fused gate/up GEMM output.
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void silu_mul_kernel(T* out, const T* gate_up, int hidden) {
  const std::int64_t t = blockIdx.x;
  const T* gate = gate_up + t * 2 * hidden;
  const T* up = gate + hidden;
  T* o = out + t * hidden;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < hidden; i += gridDim.y * blockDim.x) {
    const float g = detail::to_float(gate[i]);
    o[i] = detail::from_float<T>(g / (1.0f + __expf(-g)) * detail::to_float(up[i]));
  }
}

}  // namespace

status silu_mul(dtype dt, void* out, const void* gate_up, int n, int hidden, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    // Rows on x (no 65535 limit); hidden chunks on y, with a grid-stride loop past 65535.
    const unsigned chunks = detail::blocks_for(hidden, 256);
    const dim3 grid(unsigned(n), chunks < 65535u ? chunks : 65535u);
    silu_mul_kernel<T><<<grid, 256, 0, stream>>>(static_cast<T*>(out), static_cast<const T*>(gate_up), hidden);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
