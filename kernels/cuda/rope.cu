// RoPE on the q and k columns of the fused qkv rows, in place. Angles in fp32 from the
// same inverse frequencies as the CPU (kernels::cpu::rope_inv_freq).
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void rope_kernel(T* qkv, int row_stride, const std::int32_t* positions, const float* inv_freq,
                            int num_heads, int num_kv_heads, int head_dim, bool interleaved) {
  const std::int64_t t = blockIdx.x;
  const int half = head_dim / 2;
  const float pos = float(positions[t]);
  T* row = qkv + t * row_stride;
  const int num_items = (num_heads + num_kv_heads) * half;
  for (int item = threadIdx.x; item < num_items; item += blockDim.x) {
    // q heads then k heads: k starts right after the q columns.
    const int head = item / half, j = item % half;
    T* h = row + std::int64_t(head) * head_dim;
    const int a = interleaved ? 2 * j : j;
    const int b = interleaved ? 2 * j + 1 : j + half;
    float s, c;
    sincosf(pos * inv_freq[j], &s, &c);
    const float x0 = detail::to_float(h[a]), x1 = detail::to_float(h[b]);
    h[a] = detail::from_float<T>(x0 * c - x1 * s);
    h[b] = detail::from_float<T>(x0 * s + x1 * c);
  }
}

}  // namespace

status rope(dtype dt, void* qkv, int row_stride, const std::int32_t* positions, const float* inv_freq, int n,
            int num_heads, int num_kv_heads, int head_dim, bool interleaved, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    rope_kernel<T><<<n, 256, 0, stream>>>(static_cast<T*>(qkv), row_stride, positions, inv_freq, num_heads,
                                          num_kv_heads, head_dim, interleaved);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
