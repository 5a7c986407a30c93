#pragma once
// Locates ../shared test data. Tests that need it fail (not skip) when CI=true and it
// is missing; elsewhere they warn and return early.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace inflight::test {

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("INFLIGHT_SHARED")) return env;
  return INFLIGHT_SHARED_DIR;
}

inline bool is_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

/// Path of a file under ../shared; empty when absent (a failure in CI).
inline std::filesystem::path shared_file(const std::string& relative) {
  auto path = shared_dir() / relative;
  if (std::filesystem::exists(path)) return path;
  if (is_ci()) FAIL("missing shared test data: " << path.string());
  WARN("shared test data not found, test not run: " << path.string());
  return {};
}

}  // namespace inflight::test
