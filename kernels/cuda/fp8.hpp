#pragma once
/// FP8 E4M3 weights and activations on the device (engine.cuda_weights = "fp8"): one
/// fp32 scale per matrix (per tensor), activations quantized per step with their own
/// per-tensor scale, products through cuBLASLt (blas::fp8_linear, sm_89 and later).
///
///   scale = amax / 448 (1 when amax = 0);  code = e4m3(x / scale), saturating, RNE
///
/// the operations of dtypes/fp8.hpp's float_to_e4m3 on the host, so a matrix or a step's
/// activations convert to the same bytes on both (CPU twin: kernels::cpu::fp8_quantize).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/kernels.hpp"

namespace inflight::kernels::cuda {

/// The input types of the conversions: a step's activations (dt) or fp32 (weights
/// through the upload's staging buffer).
enum class fp8_source { bf16, f16, f32 };

inline fp8_source fp8_source_of(dtype dt) { return dt == dtype::f16 ? fp8_source::f16 : fp8_source::bf16; }

/// scale[0] = max |x| / 448 over n values (1 when all are 0); amax[0] is the scratch of
/// the reduction (a device float each; the call zeroes amax first).
status fp8_scale(fp8_source type, const void* x, std::int64_t n, float* amax, float* scale, cudaStream_t stream);

/// out[i] = e4m3(x[i] / scale[0]) over n values (scale on the device).
status to_fp8(fp8_source type, const void* x, std::int64_t n, const float* scale, std::uint8_t* out,
              cudaStream_t stream);

}  // namespace inflight::kernels::cuda
