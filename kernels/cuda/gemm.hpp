#pragma once
/// cuBLAS GEMMs of the forward pass: y[n x out] = x[n x in] * W^T with W row-major
/// [out x in] like PyTorch's Linear, bf16/fp16 inputs, fp32 accumulation.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <array>
#include <cstdint>
#include <map>
#include <tuple>

#include "kernels/cuda/kernels.hpp"

struct cublasContext;
struct cublasLtContext;

namespace inflight::kernels::cuda {

/// A cuBLAS handle bound to one stream with a fixed workspace (graph capture must not
/// allocate). Move-only.
class blas {
 public:
  /// Creates the handle, binds `stream` and allocates `workspace_bytes` on the device.
  static status try_create(cudaStream_t stream, std::size_t workspace_bytes, blas& out);

  blas() = default;
  blas(blas&& other) noexcept;
  blas& operator=(blas&& other) noexcept;
  blas(const blas&) = delete;
  blas& operator=(const blas&) = delete;
  ~blas();

  /// y = x * W^T (+ beta * y). `y_f32` picks an fp32 output (logits) over `dt`. y's rows
  /// are ldy apart (0: out).
  status linear(dtype dt, const void* x, const void* w, void* y, bool y_f32, int n, int in, int out,
                float beta = 0.0f, int ldy = 0) const;

  /// y[n x out] (dt, rows ldy apart) = (x_scale * x8[n x in]) (w_scale * w8[out x in])^T
  /// with E4M3 x8 and w8 and fp32 scales on the device, through cuBLASLt (sm_89 and
  /// later; in a multiple of 16, pointers 16-byte aligned). The algorithm of each shape
  /// is chosen once and kept.
  status fp8_linear(dtype dt, const std::uint8_t* x8, const float* x_scale, const std::uint8_t* w8,
                    const float* w_scale, void* y, int n, int in, int out, int ldy);

 private:
  void reset();
  cublasContext* handle_ = nullptr;
  cublasLtContext* lt_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  /// (dt, n, in, out, ldy) -> the cuBLASLt algorithm's 64 opaque bytes.
  std::map<std::tuple<int, int, int, int, int>, std::array<std::uint64_t, 8>> fp8_algos_;
};

}  // namespace inflight::kernels::cuda
