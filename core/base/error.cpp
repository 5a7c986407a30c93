#include "core/base/error.hpp"

#include <array>

namespace inflight {
namespace {

struct row {
  errc code;
  errc_info info;
};

// Load conditions (queue_full, queue_timeout) are 429: the server works, the client
// should come back later. 503 is for a server that cannot serve at all right now.
constexpr std::array<row, 14> table{{
    {errc::invalid_argument, {"invalid_argument", 400, "invalid_request_error", false}},
    {errc::io_error, {"io_error", 500, "internal_server_error", false}},
    {errc::corrupt_file, {"corrupt_file", 500, "internal_server_error", false}},
    {errc::not_found, {"not_found", 404, "not_found_error", false}},
    {errc::out_of_memory, {"out_of_memory", 500, "internal_server_error", false}},
    {errc::unsupported, {"unsupported", 400, "invalid_request_error", false}},
    {errc::internal, {"internal", 500, "internal_server_error", false}},
    {errc::cancelled, {"cancelled", 499, "cancelled_error", false}},
    {errc::timeout, {"timeout", 504, "timeout_error", false}},
    {errc::backend_error, {"backend_error", 500, "internal_server_error", false}},
    {errc::queue_full, {"queue_full", 429, "rate_limit_error", true}},
    {errc::queue_timeout, {"queue_timeout", 429, "rate_limit_error", true}},
    {errc::shutting_down, {"shutting_down", 503, "service_unavailable_error", false}},
    {errc::unavailable, {"unavailable", 503, "service_unavailable_error", false}},
}};

constexpr bool is_complete() {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (static_cast<std::size_t>(table[i].code) != i) return false;
  return true;
}
static_assert(is_complete(), "one row per errc, in declaration order");

}  // namespace

const errc_info& info(errc code) {
  const auto i = static_cast<std::size_t>(code);
  return i < table.size() ? table[i].info : table[static_cast<std::size_t>(errc::internal)].info;
}

const char* to_string(errc code) { return info(code).name; }

}  // namespace inflight
