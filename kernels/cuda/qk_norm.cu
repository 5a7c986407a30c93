// Qwen3's per-head RMSNorm of q and k on the fused qkv rows: one warp per head.
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int warps_per_block = 4;

// Head h of token t: h < num_heads is a q head, the rest are k heads.
template <class T>
__global__ void qk_norm_kernel(T* qkv, int row_stride, const float* q_norm, const float* k_norm, int num_tokens,
                               int num_heads, int num_kv_heads, int head_dim, float eps) {
  const int heads_per_token = num_heads + num_kv_heads;
  const std::int64_t item = std::int64_t(blockIdx.x) * warps_per_block + threadIdx.x / 32;
  if (item >= std::int64_t(num_tokens) * heads_per_token) return;
  const int lane = threadIdx.x % 32;
  const std::int64_t t = item / heads_per_token;
  const int h = int(item % heads_per_token);  // k heads follow the q heads in the row
  T* head = qkv + t * row_stride + std::int64_t(h) * head_dim;
  const float* w = h < num_heads ? q_norm : k_norm;
  float ss = 0.0f;
  for (int c = lane; c < head_dim; c += 32) {
    const float v = detail::to_float(head[c]);
    ss += v * v;
  }
  // A warp reads and writes only its own head: the shuffle is the only synchronisation.
  const float scale = rsqrtf(detail::warp_sum(ss) / float(head_dim) + eps);
  for (int c = lane; c < head_dim; c += 32) {
    head[c] = detail::from_float<T>(w[c] * (scale * detail::to_float(head[c])));
  }
}

}  // namespace

status qk_norm(dtype dt, void* qkv, int row_stride, const float* q_norm, const float* k_norm, int n, int num_heads,
               int num_kv_heads, int head_dim, float eps, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  const std::int64_t num_items = std::int64_t(n) * (num_heads + num_kv_heads);
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    qk_norm_kernel<T><<<detail::blocks_for(num_items, warps_per_block), warps_per_block * 32, 0, stream>>>(
        static_cast<T*>(qkv), row_stride, q_norm, k_norm, n, num_heads, num_kv_heads, head_dim, eps);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
