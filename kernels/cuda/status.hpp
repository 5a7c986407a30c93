#pragma once
/// Errors of kernels/cuda as values. kernels/ sees no engine types, so this is a tiny
/// status of its own; the backend turns it into an inflight::error.

#include <string>
#include <utility>

namespace inflight::kernels::cuda {

/// Ok, or the failed call with the file and line that made it.
struct status {
  std::string message;  ///< empty when ok
  const char* file = nullptr;
  int line = 0;

  bool is_ok() const { return message.empty(); }
  explicit operator bool() const { return is_ok(); }
  /// "message (file:line)", for logs and errors.
  std::string describe() const;

  static status ok() { return {}; }
  static status failure(std::string message, const char* file, int line) {
    return status{std::move(message), file, line};
  }
};

/// Status of a CUDA runtime error code (`what` names the call).
status cuda_failure(int code, const char* what, const char* file, int line);
/// Status of a cuBLAS error code.
status cublas_failure(int code, const char* what, const char* file, int line);

}  // namespace inflight::kernels::cuda

/// Returns a failed status from the enclosing function when a CUDA call fails.
#define INFLIGHT_CUDA_CHECK(expr)                                                                    \
  do {                                                                                               \
    const auto inflight_rc_ = (expr);                                                                \
    if (inflight_rc_ != 0) return ::inflight::kernels::cuda::cuda_failure(int(inflight_rc_), #expr, __FILE__, __LINE__); \
  } while (0)

/// Same for cuBLAS calls.
#define INFLIGHT_CUBLAS_CHECK(expr)                                                                  \
  do {                                                                                               \
    const auto inflight_rc_ = (expr);                                                                \
    if (inflight_rc_ != 0) return ::inflight::kernels::cuda::cublas_failure(int(inflight_rc_), #expr, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch of the kernel just before it (bad configuration, sticky errors).
#define INFLIGHT_CUDA_CHECK_LAUNCH() INFLIGHT_CUDA_CHECK(cudaGetLastError())

/// Propagates a failed status from a nested call.
#define INFLIGHT_TRY_STATUS(expr)                           \
  do {                                                      \
    auto inflight_st_ = (expr);                             \
    if (!inflight_st_.is_ok()) return inflight_st_;         \
  } while (0)
