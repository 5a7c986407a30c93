#pragma once
/// The values of every weight_dtype's rows, in plain C++: the definition of each format
/// (GGUF's / ggml's block layouts, see weight_dtype.hpp), read from blocks written by
/// llama.cpp byte for byte. Core's loaders and quantizers, the CPU kernel tables (their
/// row conversions) and the tests all read rows through these.

#include <cstddef>
#include <cstdint>

#include "dtypes/weight_dtype.hpp"

namespace inflight {

/// `n` values of `dtype` (a whole number of its blocks, unchecked) from `in` into `out`.
void dequantize(weight_dtype dtype, const std::byte* in, std::int64_t n, float* out);

// One type each (n a whole number of blocks; no checks; no alignment assumed).
void dequantize_f32(const std::byte* in, std::int64_t n, float* out);
void dequantize_f16(const std::byte* in, std::int64_t n, float* out);
void dequantize_bf16(const std::byte* in, std::int64_t n, float* out);
void dequantize_q8_0(const std::byte* in, std::int64_t n, float* out);
void dequantize_q4_0(const std::byte* in, std::int64_t n, float* out);
void dequantize_q5_0(const std::byte* in, std::int64_t n, float* out);
void dequantize_q4_1(const std::byte* in, std::int64_t n, float* out);
void dequantize_q5_1(const std::byte* in, std::int64_t n, float* out);
void dequantize_iq4_nl(const std::byte* in, std::int64_t n, float* out);
void dequantize_iq4_xs(const std::byte* in, std::int64_t n, float* out);
void dequantize_mxfp4(const std::byte* in, std::int64_t n, float* out);

/// An mxfp4 block's scale: its e8m0 exponent byte e (2^(e - 127)) halved, 2^(e - 128),
/// exact for every e (0 and 1 give fp32 subnormals). e = 255, NaN in the OCP MX format,
/// is read as 2^127, as ggml reads it.
float e8m0_half(std::byte e);

/// Sub-block j's 6-bit scale and min (0..63) of a q4_k / q5_k super-block, from its 12
/// packed scale bytes.
void k_scale_min(const std::byte* packed, int j, int& sc, int& m);
/// The 6-bit scale (0..63) of sub-block `j` of an iq4_xs super-block (at `block`).
int iq4_xs_scale(const std::byte* block, int j);
void dequantize_q4_k(const std::byte* in, std::int64_t n, float* out);
void dequantize_q5_k(const std::byte* in, std::int64_t n, float* out);
void dequantize_q6_k(const std::byte* in, std::int64_t n, float* out);
void dequantize_q2_k(const std::byte* in, std::int64_t n, float* out);
void dequantize_q3_k(const std::byte* in, std::int64_t n, float* out);

/// Sub-block j's 6-bit scale (0..63, taken as sc - 32) of a q3_k super-block, from its 12
/// packed scale bytes.
int q3_k_scale(const std::byte* packed, int j);

/// The little-endian fp16 at p (no alignment assumed), as a float.
float load_half(const std::byte* p);

}  // namespace inflight
