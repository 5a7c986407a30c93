#include "core/error.hpp"

namespace inflight {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::io_error: return "io_error";
    case errc::corrupt_file: return "corrupt_file";
    case errc::not_found: return "not_found";
    case errc::out_of_memory: return "out_of_memory";
    case errc::unsupported: return "unsupported";
    case errc::internal: return "internal";
    case errc::cancelled: return "cancelled";
    case errc::timeout: return "timeout";
    case errc::backend_error: return "backend_error";
  }
  return "unknown";
}

}  // namespace inflight
