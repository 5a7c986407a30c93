// Greedy sampling on the GPU: arg-max (ties to the lowest id) and its log-softmax, so
// only a token id and a float per row cross back to the host. The masked variant takes a
// grammar's allowed-token bitmask per row (bit i of word i / 64 set: token i allowed) and
// picks among the allowed tokens only, as core's sampler does on the host
// (greedy_allowed_token); its logprob stays that of the unmasked row.
#include <cfloat>

#include "kernels/cuda/device_common.cuh"

namespace inflight::kernels::cuda {
namespace {

constexpr int threads = 1024;

struct best {
  float value;
  int index;
};

__device__ __forceinline__ best better(best a, best b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

__device__ best warp_best(best v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const best other{__shfl_xor_sync(0xffffffffu, v.value, o), __shfl_xor_sync(0xffffffffu, v.index, o)};
    v = better(v, other);
  }
  return v;
}

/// Block b samples logits row rows[b] (b itself without `rows`); with `masks`, only the
/// tokens its row of `words` 64-bit words allows (none allowed: token 0, as on the host).
template <bool Masked>
__global__ void greedy_kernel(const float* logits, int vocab, const std::int32_t* rows, const std::uint64_t* masks,
                              int words, std::int32_t* tokens, float* logprobs) {
  __shared__ float values[32];
  __shared__ int indices[32];
  __shared__ float scratch[32];
  const float* row = logits + std::int64_t(rows != nullptr ? rows[blockIdx.x] : int(blockIdx.x)) * vocab;
  const std::uint64_t* mask = Masked ? masks + std::int64_t(blockIdx.x) * words : nullptr;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  best mine{-FLT_MAX, vocab};
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    if constexpr (Masked) {
      if (i / 64 >= words || ((mask[i / 64] >> (i % 64)) & 1u) == 0) continue;
    }
    mine = better(mine, best{row[i], i});
  }
  mine = warp_best(mine);
  if (lane == 0) {
    values[warp] = mine.value;
    indices[warp] = mine.index;
  }
  __syncthreads();
  best all = lane < int(blockDim.x / 32) ? best{values[lane], indices[lane]} : best{-FLT_MAX, vocab};
  all = warp_best(all);
  const int token = all.index < vocab ? all.index : 0;
  const float top = row[token];
  float sum = 0.0f;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) sum += __expf(row[i] - top);
  sum = detail::block_sum(sum, scratch);
  if (threadIdx.x == 0) {
    tokens[blockIdx.x] = token;
    logprobs[blockIdx.x] = -logf(sum);
  }
}

}  // namespace

status greedy_sample(const float* logits, int num_rows, int vocab, std::int32_t* tokens, float* logprobs,
                     cudaStream_t stream) {
  if (num_rows <= 0) return status::ok();
  greedy_kernel<false><<<num_rows, threads, 0, stream>>>(logits, vocab, nullptr, nullptr, 0, tokens, logprobs);
  INFLIGHT_CUDA_CHECK_LAUNCH();
  return status::ok();
}

status masked_greedy_sample(const float* logits, const std::int32_t* rows, int num_rows, int vocab,
                            const std::uint64_t* masks, int words, std::int32_t* tokens, float* logprobs,
                            cudaStream_t stream) {
  if (num_rows <= 0) return status::ok();
  greedy_kernel<true><<<num_rows, threads, 0, stream>>>(logits, vocab, rows, masks, words, tokens, logprobs);
  INFLIGHT_CUDA_CHECK_LAUNCH();
  return status::ok();
}

}  // namespace inflight::kernels::cuda
