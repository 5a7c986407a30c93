#pragma once
/// Products over weight matrices as they lie in a GGUF file (q8_0, q4_0, q4_k, q6_k
/// blocks, dtypes/weight_dtype.hpp), on the device: no fp32 or bf16 copy of the matrix.
///
///   x (dt rows) --quantize_activations--> prepared rows (kernels/cpu/weight_types.hpp's
///   q8_0 / q8_k layout, byte for byte the CPU's) --quant_gemv--> y
///
/// quant_gemv: a warp per output row, its 32 lanes over the row's 32-value units (unit u
/// = values 32u..32u+31: a q8_0 / q4_0 block, half a q4_k sub-block pair, two q6_k
/// sub-blocks), lane l taking units l, l + 32, l + 64, ... in order. Per unit and token:
/// exact integer dot products (dp4a), then in fp32
///
///   q8_0:  acc = fma(float(isum), d * dx[u], acc)                      isum = q . x
///   q4_0:  acc = fma(float(isum), d * dx[u], acc)                      isum = nib . x - 8 * sum32[u]
///   q4_k:  acc = fma(float(sc * dot), d * dx[u/8], acc);  acc = fma(float(m * (bsum[2u] + bsum[2u+1])), -dmin * dx[u/8], acc)
///   q6_k:  acc = fma(float(sc0 * dot0 - 32 * sc0 * bsum[2u] + sc1 * dot1 - 32 * sc1 * bsum[2u+1]), d * dx[u/8], acc)
///
/// then the lanes' sums by the butterfly (xor 16, 8, 4, 2, 1). kernels::cpu::quant_gemv_twin
/// computes the same operations in the same order (its [gpu] test asks for the same bits).
///
/// Steps of more than quant_gemv_max_tokens tokens dequantize rows of the matrix into a
/// bounded scratch (dequantize_rows, the values of dtypes/dequantize.cpp rounded to dt)
/// and multiply them with cuBLAS.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "dtypes/weight_dtype.hpp"
#include "kernels/cpu/weight_types.hpp"
#include "kernels/cuda/kernels.hpp"

namespace inflight::kernels::cuda {

/// A matrix [rows x cols] of `type` blocks on the device, row o at data + o * row_bytes.
struct quant_matrix {
  weight_dtype type = weight_dtype::q8_0;
  const std::byte* data = nullptr;
  std::int64_t row_bytes = 0;
  int rows = 0;
  int cols = 0;
};

/// The types the products read in their blocks: q8_0, q4_0, q4_k, q6_k.
bool quant_matmul_supports(weight_dtype type);

/// Tokens one quant_gemv call takes.
inline constexpr int quant_gemv_max_tokens = 8;

/// Prepares n rows of k values (x in dt, row t at x + t * ldx elements) in `format`
/// (q8_0 or q8_k; k a multiple of its block) into out + t * out_row_bytes, the bytes the
/// CPU's prepare writes for the same floats (kernels/cpu/weight_types.hpp).
status quantize_activations(dtype dt, const void* x, std::int64_t ldx, int n, int k, cpu::input_format format,
                            std::byte* out, std::int64_t out_row_bytes, cudaStream_t stream);

/// y[t * ldy + o] = row o of w . prepared row t, for t < n <= quant_gemv_max_tokens;
/// y in fp32 (y_f32) or dt. The prepared rows are input_of(w.type)'s format.
status quant_gemv(const quant_matrix& w, const std::byte* x_prepared, std::int64_t x_row_bytes, int n, void* y,
                  bool y_f32, dtype dt, std::int64_t ldy, cudaStream_t stream);

/// Rows [row_begin, row_end) of w as dt values, row-major from dst.
status dequantize_rows(const quant_matrix& w, int row_begin, int row_end, dtype dt, void* dst, cudaStream_t stream);

/// out[t] = row ids[t] of w for t < n: fp32 rows of w.cols (out_f32) or dt rows.
status dequantize_gather(const quant_matrix& w, const std::int32_t* ids, int n, void* out, bool out_f32, dtype dt,
                         cudaStream_t stream);

}  // namespace inflight::kernels::cuda
