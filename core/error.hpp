#pragma once
/// Errors are values: std::expected<T, error> across module boundaries.

#include <expected>
#include <string>
#include <utility>

namespace inflight {

enum class errc {
  invalid_argument,   ///< bad input from a caller or a client
  io_error,           ///< a file could not be opened or read
  corrupt_file,       ///< a file's contents contradict its header or format
  not_found,          ///< a named thing (file, tensor, plugin, sequence) does not exist
  out_of_memory,      ///< KV blocks or device memory exhausted
  unsupported,        ///< a valid request this build cannot serve
  internal,           ///< a real internal fault
  cancelled,          ///< the request was cancelled
  timeout,            ///< a deadline passed
  backend_error,      ///< a kernel / CUDA / cuBLAS failure
};

const char* to_string(errc code);

struct error {
  errc code = errc::internal;
  std::string message;
};

template <class T>
using result = std::expected<T, error>;

inline std::unexpected<error> make_error(errc code, std::string message) {
  return std::unexpected<error>(error{code, std::move(message)});
}

}  // namespace inflight
