#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/base/error.hpp"

using namespace inflight;

TEST_CASE("errc: every code has its own name and row", "[core][error]") {
  std::set<std::string> names;
  const auto last = static_cast<int>(errc::unavailable);
  for (int i = 0; i <= last; ++i) {
    const auto code = static_cast<errc>(i);
    INFO(i);
    CHECK(names.insert(to_string(code)).second);
    CHECK(info(code).http_status >= 400);
    CHECK(std::string(info(code).api_type).size() > 0);
  }
  CHECK(std::string(to_string(errc::queue_full)) == "queue_full");
  CHECK(std::string(to_string(errc::out_of_memory)) == "out_of_memory");
  // Only load conditions ask the client to come back later.
  CHECK(info(errc::queue_full).is_retryable);
  CHECK(info(errc::queue_timeout).is_retryable);
  CHECK_FALSE(info(errc::shutting_down).is_retryable);
  CHECK_FALSE(info(errc::out_of_memory).is_retryable);
}
