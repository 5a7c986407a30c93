#pragma once
/// The reference quantization of every weight_dtype, in plain C++, used at model load to
/// quantize f32 weights, by the GGUF writer, and by the kernels' twin tests; the values
/// of each format (its dequantization) are dtypes/dequantize.hpp's.
///
/// Dequantization reads blocks written by llama.cpp byte for byte. Quantization is our
/// own: a per-block scale search that minimizes a weighted squared error (weights
/// rms(block) + |x|, which favours the large values that dominate a dot product); q4_1,
/// q5_1 and mxfp4 follow ggml's rules instead (mxfp4's blocks are llama-quantize's).

#include <cstddef>
#include <cstdint>

#include "core/base/error.hpp"
#include "dtypes/dequantize.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight {

/// Writes n values (a whole number of dtype's blocks) into row_bytes(dtype, n) bytes of out.
result<void> quantize_row(weight_dtype dtype, const float* x, std::int64_t n, std::byte* out);
/// Reads n values (a whole number of dtype's blocks) from row_bytes(dtype, n) bytes of in.
result<void> dequantize_row(weight_dtype dtype, const std::byte* in, std::int64_t n, float* out);

// The block formats one by one (n a whole number of blocks; no checks).
void quantize_q8_0(const float* x, std::int64_t n, std::byte* out);
void quantize_q4_0(const float* x, std::int64_t n, std::byte* out);
void quantize_q5_0(const float* x, std::int64_t n, std::byte* out);
void quantize_q4_1(const float* x, std::int64_t n, std::byte* out);
void quantize_q5_1(const float* x, std::int64_t n, std::byte* out);
void quantize_iq4_nl(const float* x, std::int64_t n, std::byte* out);
void quantize_iq4_xs(const float* x, std::int64_t n, std::byte* out);
void quantize_q4_k(const float* x, std::int64_t n, std::byte* out);
void quantize_q5_k(const float* x, std::int64_t n, std::byte* out);
void quantize_q6_k(const float* x, std::int64_t n, std::byte* out);
void quantize_q2_k(const float* x, std::int64_t n, std::byte* out);
void quantize_q3_k(const float* x, std::int64_t n, std::byte* out);
void quantize_mxfp4(const float* x, std::int64_t n, std::byte* out);

}  // namespace inflight
