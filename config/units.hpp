#pragma once
/// The sizes and durations deployment keys take (and requests: keep_alive).

#include <cstdint>
#include <string>

#include "core/base/error.hpp"

namespace inflight::config {

/// Parses sizes such as 1048576, "256MiB", "1.5GiB", "512MB".
result<std::int64_t> parse_bytes(const std::string& text);

/// Parses durations as Ollama's keep_alive takes them: seconds (a number, or a string
/// of one), or "250ms", "30s", "5m", "1h", "1h30m"; a negative one ("-1", "-1m") means
/// forever and is returned as -1.
result<double> parse_duration(const std::string& text);

}  // namespace inflight::config
