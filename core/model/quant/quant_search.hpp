#pragma once
/// The scale searches shared by the block formats of quantize.cpp / quantize_k.cpp.

#include <cstdint>

namespace inflight::quant_detail {

/// Importance of each value in a block's squared error: rms(block) + |x|.
void importance(const float* x, int n, float* w);

/// d and q (in [qmin, qmax], qmin < 0 < qmax) for x ~ d * q, minimizing sum w (x - d q)^2
/// over a few candidate scales (the largest |x| mapped near qmin), each refitted by least
/// squares. Returns d (0 for an all-zero block).
float search_symmetric(const float* x, const float* w, int n, int qmin, int qmax);

/// s >= 0 and b <= 0 for x ~ s * q + b, q in [0, qmax], minimizing sum w (x - s q - b)^2
/// over candidate scales around (max - min) / qmax, each refitted by least squares.
void search_affine(const float* x, const float* w, int n, int qmax, float& s, float& b);

/// round(x / d) clamped to [qmin, qmax] (0 when d is 0).
int quantize_value(float x, float d, int qmin, int qmax);

/// Writes a little-endian half at p (no alignment assumed); dtypes/dequantize.hpp reads it.
void store_half(std::byte* p, float value);

}  // namespace inflight::quant_detail
