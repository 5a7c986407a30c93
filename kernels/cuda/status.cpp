#include "kernels/cuda/status.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace inflight::kernels::cuda {

std::string status::describe() const {
  if (is_ok()) return "ok";
  return message + " (" + (file != nullptr ? file : "?") + ":" + std::to_string(line) + ")";
}

status cuda_failure(int code, const char* what, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  return status::failure(std::string(what) + " failed: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err),
                         file, line);
}

status cublas_failure(int code, const char* what, const char* file, int line) {
  const auto err = static_cast<cublasStatus_t>(code);
  return status::failure(std::string(what) + " failed: " + cublasGetStatusName(err) + ": " +
                             cublasGetStatusString(err),
                         file, line);
}

}  // namespace inflight::kernels::cuda
