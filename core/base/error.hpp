#pragma once
/// Errors are values: std::expected<T, error> across module boundaries, carried as
/// values through actor messages, and turned into an HTTP / WebSocket error once, at
/// the edge, from the one table below (errc_info).

#include <expected>
#include <string>
#include <utility>

namespace inflight {

/// Each condition a caller may need to tell apart has its own code.
enum class errc {
  invalid_argument,   ///< bad input from a caller or a client
  io_error,           ///< a file could not be opened or read
  corrupt_file,       ///< a file's contents contradict its header or format
  not_found,          ///< a named thing (file, tensor, plugin, sequence) does not exist
  out_of_memory,      ///< KV blocks or device memory exhausted
  unsupported,        ///< a valid request this build cannot serve
  internal,           ///< a real internal fault
  cancelled,          ///< the request was cancelled
  timeout,            ///< a request's own deadline passed (server.request_timeout_s)
  backend_error,      ///< a kernel / CUDA / cuBLAS failure
  queue_full,         ///< a waiting-queue limit (requests or prompt tokens) is reached: retry later
  queue_timeout,      ///< the request waited longer than server.max_queue_time_s: retry later
  shutting_down,      ///< the engine no longer accepts work
  unavailable,        ///< the engine cannot serve right now (unhealthy)
};

/// How an error code is presented to clients: one row per errc, the only mapping.
struct errc_info {
  const char* name;        ///< stable machine-readable name ("queue_full"), also the API `code`
  int http_status;         ///< 400, 404, 429, 500, 503, 504 ...
  const char* api_type;    ///< OpenAI error `type` ("invalid_request_error", ...)
  bool is_retryable;       ///< a load condition: the client should retry later (429 + Retry-After)
};

/// The row of `code`.
const errc_info& info(errc code);

/// info(code).name.
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
