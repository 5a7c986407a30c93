#include "kernels/cuda/gemm.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstring>
#include <string>

#include <utility>

namespace inflight::kernels::cuda {

status blas::try_create(cudaStream_t stream, std::size_t workspace_bytes, blas& out) {
  out.reset();
  INFLIGHT_CUBLAS_CHECK(cublasCreate(&out.handle_));
  INFLIGHT_CUBLAS_CHECK(cublasSetStream(out.handle_, stream));
  INFLIGHT_CUBLAS_CHECK(cublasSetMathMode(out.handle_, CUBLAS_DEFAULT_MATH));
  INFLIGHT_CUBLAS_CHECK(cublasLtCreate(&out.lt_));
  out.stream_ = stream;
  if (workspace_bytes > 0) {
    INFLIGHT_CUDA_CHECK(cudaMalloc(&out.workspace_, workspace_bytes));
    INFLIGHT_CUBLAS_CHECK(cublasSetWorkspace(out.handle_, out.workspace_, workspace_bytes));
    out.workspace_bytes_ = workspace_bytes;
  }
  return status::ok();
}

blas::blas(blas&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      lt_(std::exchange(other.lt_, nullptr)),
      stream_(other.stream_),
      workspace_(std::exchange(other.workspace_, nullptr)),
      workspace_bytes_(std::exchange(other.workspace_bytes_, 0)),
      fp8_algos_(std::move(other.fp8_algos_)) {}

blas& blas::operator=(blas&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, nullptr);
    lt_ = std::exchange(other.lt_, nullptr);
    stream_ = other.stream_;
    workspace_ = std::exchange(other.workspace_, nullptr);
    workspace_bytes_ = std::exchange(other.workspace_bytes_, 0);
    fp8_algos_ = std::move(other.fp8_algos_);
  }
  return *this;
}

blas::~blas() { reset(); }

void blas::reset() {
  // Teardown errors have nowhere to go: the handle and memory are gone either way.
  if (handle_ != nullptr) cublasDestroy(handle_);
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (workspace_ != nullptr) cudaFree(workspace_);
  handle_ = nullptr;
  lt_ = nullptr;
  workspace_ = nullptr;
  workspace_bytes_ = 0;
  fp8_algos_.clear();
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

namespace {

/// The cuBLASLt descriptors of one product, destroyed with it.
struct lt_descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~lt_descriptors() {
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

status blas::fp8_linear(dtype dt, const std::uint8_t* x8, const float* x_scale, const std::uint8_t* w8,
                        const float* w_scale, void* y, int n, int in, int out, int ldy) {
  if (n <= 0) return status::ok();
  if (lt_ == nullptr) return status::failure("cuBLASLt handle not created", __FILE__, __LINE__);
  if (in % 16 != 0) return status::failure("fp8_linear: the inner dimension must be a multiple of 16", __FILE__, __LINE__);
  // Column-major, as linear(): y^T [out x n] = op(W)[out x in] x^T [in x n] with op = T
  // (the "TN" layout FP8 products take).
  lt_descriptors d;
  const cudaDataType_t yt = dt == dtype::f16 ? CUDA_R_16F : CUDA_R_16BF;
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof(w_scale)));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof(x_scale)));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.a, CUDA_R_8F_E4M3, std::uint64_t(in), std::uint64_t(out), in));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.b, CUDA_R_8F_E4M3, std::uint64_t(in), std::uint64_t(n), in));
  INFLIGHT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, yt, std::uint64_t(out), std::uint64_t(n), ldy > 0 ? ldy : out));
  cublasLtMatmulAlgo_t algo;
  static_assert(sizeof(algo) == sizeof(std::array<std::uint64_t, 8>));
  const auto key = std::make_tuple(int(dt), n, in, out, ldy);
  if (auto it = fp8_algos_.find(key); it != fp8_algos_.end()) {
    std::memcpy(&algo, it->second.data(), sizeof(algo));
  } else {
    INFLIGHT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.preference));
    INFLIGHT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                               &workspace_bytes_, sizeof(workspace_bytes_)));
    cublasLtMatmulHeuristicResult_t found{};
    int num_found = 0;
    INFLIGHT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt_, d.op, d.a, d.b, d.c, d.c, d.preference, 1, &found,
                                                         &num_found));
    if (num_found == 0) {
      return status::failure("fp8_linear: cuBLASLt has no FP8 algorithm for n " + std::to_string(n) + ", in " +
                                 std::to_string(in) + ", out " + std::to_string(out),
                             __FILE__, __LINE__);
    }
    algo = found.algo;
    std::array<std::uint64_t, 8> bytes{};
    std::memcpy(bytes.data(), &algo, sizeof(algo));
    fp8_algos_.emplace(key, bytes);
  }
  const float alpha = 1.0f, beta = 0.0f;
  INFLIGHT_CUBLAS_CHECK(cublasLtMatmul(lt_, d.op, &alpha, w8, d.a, x8, d.b, &beta, y, d.c, y, d.c, &algo, workspace_,
                                       workspace_bytes_, stream_));
  return status::ok();
}

}  // namespace inflight::kernels::cuda
