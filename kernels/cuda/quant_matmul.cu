// Products over GGUF blocks on the device (quant_matmul.hpp): activation quantization,
// the warp-per-row GEMV with dp4a, and dequantization into dt for cuBLAS.
#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/quant_blocks.cuh"
#include "kernels/cuda/quant_matmul.hpp"

namespace inflight::kernels::cuda {
namespace {

using wt = weight_dtype;
using namespace quant_blocks;

// ---- activations ----------------------------------------------------------------

/// q8_0: a warp per (token, 32-value block).
template <class T>
__global__ void quantize_q8_0_kernel(const T* x, std::int64_t ldx, int n, int k, std::byte* out,
                                     std::int64_t out_row_bytes, std::int64_t scales, std::int64_t sums) {
  const int blocks = k / 32, lane = threadIdx.x % 32;
  const std::int64_t gw = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (gw >= std::int64_t(n) * blocks) return;
  const int t = int(gw / blocks), b = int(gw % blocks);
  const float v = detail::to_float(x[t * ldx + 32 * b + lane]);
  const float amax = detail::warp_max(fabsf(v));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = __float2int_rn(__fmul_rn(v, id));
  std::byte* row = out + t * out_row_bytes;
  reinterpret_cast<signed char*>(row)[32 * b + lane] = static_cast<signed char>(q);
  int sum = q;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) {
    *reinterpret_cast<float*>(row + scales + 4 * b) = d;
    *reinterpret_cast<int*>(row + sums + 4 * b) = sum;
  }
}

/// q8_k: a block of 256 threads per (token, 256-value super-block).
template <class T>
__global__ void quantize_q8_k_kernel(const T* x, std::int64_t ldx, int k, std::byte* out, std::int64_t out_row_bytes,
                                     std::int64_t scales, std::int64_t sums) {
  __shared__ float warp_max_of[8];
  const int supers = k / 256, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int t = int(blockIdx.x / supers), s = int(blockIdx.x % supers);
  const float v = detail::to_float(x[t * ldx + 256 * s + threadIdx.x]);
  const float wmax = detail::warp_max(fabsf(v));
  if (lane == 0) warp_max_of[warp] = wmax;
  __syncthreads();
  float amax = 0.0f;
#pragma unroll
  for (int w = 0; w < 8; ++w) amax = fmaxf(amax, warp_max_of[w]);
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = __float2int_rn(__fmul_rn(v, id));
  std::byte* row = out + t * out_row_bytes;
  reinterpret_cast<signed char*>(row)[256 * s + threadIdx.x] = static_cast<signed char>(q);
  int sum = q;
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);  // within each 16 lanes
  if (lane % 16 == 0) {
    *reinterpret_cast<short*>(row + sums + 2 * ((256 * s + 32 * warp + lane) / 16)) = static_cast<short>(sum);
  }
  if (threadIdx.x == 0) *reinterpret_cast<float*>(row + scales + 4 * s) = d;
}

// ---- the GEMV -------------------------------------------------------------------

template <class O>
__device__ __forceinline__ void store_out(O* y, float v) {
  if constexpr (std::is_same_v<O, float>) {
    *y = v;
  } else {
    *y = detail::from_float<O>(v);
  }
}

constexpr int gemv_warps = 4;

template <wt W, int NT, class O>
__global__ void __launch_bounds__(32 * gemv_warps)
    quant_gemv_kernel(const std::byte* w, std::int64_t row_bytes, int rows, int units, const std::byte* x,
                      std::int64_t x_row_bytes, std::int64_t scales, std::int64_t sums, O* y, std::int64_t ldy) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * gemv_warps + threadIdx.x / 32;
  if (row >= rows) return;
  const std::byte* wr = w + row * row_bytes;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  for (int u = lane; u < units; u += 32) {
    const unit_of<W> unit(wr, u);
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[t] = unit_product<W>(unit, x + t * x_row_bytes, u, scales, sums, acc[t]);
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const float v = detail::warp_sum(acc[t]);
    if (lane == 0) store_out(y + t * ldy + row, v);
  }
}

template <wt W, class O>
status launch_gemv(const quant_matrix& w, const std::byte* x, std::int64_t x_row_bytes, int n, O* y, std::int64_t ldy,
                   cudaStream_t stream) {
  const auto format = cpu::input_of(W);
  const std::int64_t scales = cpu::prepared_scales_offset(w.cols), sums = cpu::prepared_sums_offset(format, w.cols);
  const unsigned grid = detail::blocks_for(w.rows, gemv_warps);
  const int units = w.cols / 32;
  auto go = [&](auto nt) {
    quant_gemv_kernel<W, decltype(nt)::value, O><<<grid, 32 * gemv_warps, 0, stream>>>(
        w.data, w.row_bytes, w.rows, units, x, x_row_bytes, scales, sums, y, ldy);
  };
  switch (n) {
    case 1: go(std::integral_constant<int, 1>{}); break;
    case 2: go(std::integral_constant<int, 2>{}); break;
    case 3: go(std::integral_constant<int, 3>{}); break;
    case 4: go(std::integral_constant<int, 4>{}); break;
    case 5: go(std::integral_constant<int, 5>{}); break;
    case 6: go(std::integral_constant<int, 6>{}); break;
    case 7: go(std::integral_constant<int, 7>{}); break;
    default: go(std::integral_constant<int, 8>{}); break;
  }
  INFLIGHT_CUDA_CHECK_LAUNCH();
  return status::ok();
}

template <class O>
status gemv_of_type(const quant_matrix& w, const std::byte* x, std::int64_t x_row_bytes, int n, O* y, std::int64_t ldy,
                    cudaStream_t stream) {
  switch (w.type) {
    case wt::q8_0: return launch_gemv<wt::q8_0>(w, x, x_row_bytes, n, y, ldy, stream);
    case wt::q4_0: return launch_gemv<wt::q4_0>(w, x, x_row_bytes, n, y, ldy, stream);
    case wt::q4_k: return launch_gemv<wt::q4_k>(w, x, x_row_bytes, n, y, ldy, stream);
    case wt::q6_k: return launch_gemv<wt::q6_k>(w, x, x_row_bytes, n, y, ldy, stream);
    default: break;
  }
  return status::failure(std::string("quant_gemv: ") + to_string(w.type) + " is not read in its blocks", __FILE__,
                         __LINE__);
}

// ---- dequantization ---------------------------------------------------------------

template <class O>
__global__ void dequantize_rows_kernel(wt type, const std::byte* w, std::int64_t row_bytes, int row_begin, int cols,
                                       std::int64_t count, O* dst) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = row_begin + e / cols;
    store_out(dst + e, value_at(type, w + r * row_bytes, int(e % cols)));
  }
}

template <class O>
__global__ void dequantize_gather_kernel(wt type, const std::byte* w, std::int64_t row_bytes, const std::int32_t* ids,
                                         int cols, O* out) {
  const std::byte* row = w + std::int64_t(ids[blockIdx.x]) * row_bytes;
  O* dst = out + std::int64_t(blockIdx.x) * cols;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) store_out(dst + i, value_at(type, row, i));
}

status check_matrix(const quant_matrix& w, const char* what) {
  if (!quant_matmul_supports(w.type)) {
    return status::failure(std::string(what) + ": " + to_string(w.type) + " is not read in its blocks", __FILE__,
                           __LINE__);
  }
  const int values = layout_of(w.type).block_values;
  if (w.cols <= 0 || w.cols % values != 0 || w.row_bytes != row_bytes(w.type, w.cols)) {
    return status::failure(std::string(what) + ": rows of " + std::to_string(w.cols) + " values are not whole " +
                               to_string(w.type) + " blocks",
                           __FILE__, __LINE__);
  }
  if (w.type == wt::q4_k && (reinterpret_cast<std::uintptr_t>(w.data) % 16 != 0 || w.row_bytes % 16 != 0)) {
    return status::failure(std::string(what) + ": q4_k rows must start 16-byte aligned", __FILE__, __LINE__);
  }
  return status::ok();
}

}  // namespace

bool quant_matmul_supports(weight_dtype type) {
  return type == wt::q8_0 || type == wt::q4_0 || type == wt::q4_k || type == wt::q6_k;
}

status quantize_activations(dtype dt, const void* x, std::int64_t ldx, int n, int k, cpu::input_format format,
                            std::byte* out, std::int64_t out_row_bytes, cudaStream_t stream) {
  if (n <= 0) return status::ok();
  const bool is_k = format == cpu::input_format::q8_k;
  if ((!is_k && format != cpu::input_format::q8_0) || k <= 0 || k % (is_k ? 256 : 32) != 0) {
    return status::failure("quantize_activations: q8_0 rows of a multiple of 32 values or q8_k rows of 256",
                           __FILE__, __LINE__);
  }
  const std::int64_t scales = cpu::prepared_scales_offset(k), sums = cpu::prepared_sums_offset(format, k);
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    const auto* xs = static_cast<const T*>(x);
    if (is_k) {
      quantize_q8_k_kernel<T><<<unsigned(std::int64_t(n) * (k / 256)), 256, 0, stream>>>(xs, ldx, k, out,
                                                                                         out_row_bytes, scales, sums);
    } else {
      const auto warps = std::int64_t(n) * (k / 32);
      quantize_q8_0_kernel<T><<<detail::blocks_for(warps, 8), 256, 0, stream>>>(xs, ldx, n, k, out, out_row_bytes,
                                                                                scales, sums);
    }
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

status quant_gemv(const quant_matrix& w, const std::byte* x_prepared, std::int64_t x_row_bytes, int n, void* y,
                  bool y_f32, dtype dt, std::int64_t ldy, cudaStream_t stream) {
  INFLIGHT_TRY_STATUS(check_matrix(w, "quant_gemv"));
  if (n <= 0 || w.rows <= 0) return status::ok();
  if (n > quant_gemv_max_tokens) {
    return status::failure("quant_gemv: at most " + std::to_string(quant_gemv_max_tokens) + " tokens a call",
                           __FILE__, __LINE__);
  }
  if (reinterpret_cast<std::uintptr_t>(x_prepared) % 16 != 0 || x_row_bytes % 16 != 0) {
    return status::failure("quant_gemv: prepared rows must start 16-byte aligned", __FILE__, __LINE__);
  }
  if (y_f32) return gemv_of_type(w, x_prepared, x_row_bytes, n, static_cast<float*>(y), ldy, stream);
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    return gemv_of_type(w, x_prepared, x_row_bytes, n, static_cast<T*>(y), ldy, stream);
  });
}

status dequantize_rows(const quant_matrix& w, int row_begin, int row_end, dtype dt, void* dst, cudaStream_t stream) {
  INFLIGHT_TRY_STATUS(check_matrix(w, "dequantize_rows"));
  if (row_begin < 0 || row_end > w.rows || row_begin > row_end) {
    return status::failure("dequantize_rows: rows outside the matrix", __FILE__, __LINE__);
  }
  const std::int64_t count = std::int64_t(row_end - row_begin) * w.cols;
  if (count == 0) return status::ok();
  const unsigned grid = unsigned(std::min<std::int64_t>(detail::blocks_for(count, 256), 65535));
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    dequantize_rows_kernel<T><<<grid, 256, 0, stream>>>(w.type, w.data, w.row_bytes, row_begin, w.cols, count,
                                                        static_cast<T*>(dst));
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

status dequantize_gather(const quant_matrix& w, const std::int32_t* ids, int n, void* out, bool out_f32, dtype dt,
                         cudaStream_t stream) {
  INFLIGHT_TRY_STATUS(check_matrix(w, "dequantize_gather"));
  if (n <= 0) return status::ok();
  if (out_f32) {
    dequantize_gather_kernel<float><<<n, 256, 0, stream>>>(w.type, w.data, w.row_bytes, ids, w.cols,
                                                           static_cast<float*>(out));
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  }
  return detail::dispatch(dt, [&](auto tag) {
    using T = decltype(tag);
    dequantize_gather_kernel<T><<<n, 256, 0, stream>>>(w.type, w.data, w.row_bytes, ids, w.cols, static_cast<T*>(out));
    INFLIGHT_CUDA_CHECK_LAUNCH();
    return status::ok();
  });
}

}  // namespace inflight::kernels::cuda
