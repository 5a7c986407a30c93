#pragma once
/// cuBLAS GEMMs of the forward pass: y[n x out] = x[n x in] * W^T with W row-major
/// [out x in] like PyTorch's Linear, bf16/fp16 inputs, fp32 accumulation.

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cuda/kernels.hpp"

struct cublasContext;

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

 private:
  void reset();
  cublasContext* handle_ = nullptr;
  void* workspace_ = nullptr;
};

}  // namespace inflight::kernels::cuda
