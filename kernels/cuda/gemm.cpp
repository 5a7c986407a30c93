#include "kernels/cuda/gemm.hpp"

#include <cublas_v2.h>

#include <utility>

namespace inflight::kernels::cuda {

status blas::try_create(cudaStream_t stream, std::size_t workspace_bytes, blas& out) {
  out.reset();
  INFLIGHT_CUBLAS_CHECK(cublasCreate(&out.handle_));
  INFLIGHT_CUBLAS_CHECK(cublasSetStream(out.handle_, stream));
  INFLIGHT_CUBLAS_CHECK(cublasSetMathMode(out.handle_, CUBLAS_DEFAULT_MATH));
  if (workspace_bytes > 0) {
    INFLIGHT_CUDA_CHECK(cudaMalloc(&out.workspace_, workspace_bytes));
    INFLIGHT_CUBLAS_CHECK(cublasSetWorkspace(out.handle_, out.workspace_, workspace_bytes));
  }
  return status::ok();
}

blas::blas(blas&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), workspace_(std::exchange(other.workspace_, nullptr)) {}

blas& blas::operator=(blas&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    workspace_ = std::exchange(other.workspace_, nullptr);
  }
  return *this;
}

blas::~blas() { reset(); }

void blas::reset() {
  // Teardown errors have nowhere to go: the handle and memory are gone either way.
  if (handle_ != nullptr) cublasDestroy(handle_);
  if (workspace_ != nullptr) cudaFree(workspace_);
  handle_ = nullptr;
  workspace_ = nullptr;
}

status blas::linear(dtype dt, const void* x, const void* w, void* y, bool y_f32, int n, int in, int out,
                    float beta, int ldy) const {
  if (n <= 0) return status::ok();
  if (handle_ == nullptr) return status::failure("cuBLAS handle not created", __FILE__, __LINE__);
  const cudaDataType_t ab = dt == dtype::f16 ? CUDA_R_16F : CUDA_R_16BF;
  const cudaDataType_t c = y_f32 ? CUDA_R_32F : ab;
  const float alpha = 1.0f;
  // Row-major y[n x out] is column-major y^T [out x n] = op(W)[out x in] * x^T[in x n], op = T.
  INFLIGHT_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &alpha, w, ab, in, x, ab, in,
                                     &beta, y, c, ldy > 0 ? ldy : out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return status::ok();
}

}  // namespace inflight::kernels::cuda
