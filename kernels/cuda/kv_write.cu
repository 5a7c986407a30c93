// KV-cache write: each token's k and v rows scattered to its slot (slot_mapping).
#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

template <class T>
__global__ void kv_write_kernel(T* k_cache, T* v_cache, const T* src, int row_stride, int k_offset, int v_offset,
                                const std::int32_t* slot_mapping, int kv_dim) {
  const std::int64_t t = blockIdx.x;
  const std::int64_t slot = slot_mapping[t];
  const T* row = src + t * row_stride;
  T* k = k_cache + slot * kv_dim;
  T* v = v_cache + slot * kv_dim;
  for (int c = threadIdx.x; c < kv_dim; c += blockDim.x) {
    k[c] = row[k_offset + c];
    v[c] = row[v_offset + c];
  }
}

}  // namespace

status kv_write(dtype dt, void* k_cache, void* v_cache, const void* src, int row_stride, int k_offset, int v_offset,
                const std::int32_t* slot_mapping, int n, int kv_dim, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    kv_write_kernel<T><<<n, 128, 0, stream>>>(static_cast<T*>(k_cache), static_cast<T*>(v_cache),
                                              static_cast<const T*>(src), row_stride, k_offset, v_offset,
                                              slot_mapping, kv_dim);
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
