#include "apps/inflight/host_info.hpp"

#include <ctime>
#include <fstream>

namespace inflight::app {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string weight_dtype_list(const model_weights& weights) {
  std::string out;
  for (const auto dtype : weight_dtypes_of(weights)) out += (out.empty() ? "" : "+") + std::string(to_string(dtype));
  return out;
}

std::string kv_dtype_of(const deployment& d) {
  if (d.engine.kv_dtype != "auto") return d.engine.kv_dtype;
  return d.engine.backend == "cpu" ? "f32" : d.model.dtype;
}

}  // namespace inflight::app
