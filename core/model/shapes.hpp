#pragma once
/// The named model shapes of the benchmark workloads (../shared/workloads/README.md).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model_config.hpp"

namespace inflight {

/// bench-20M, bench-110M (llama2.c layout, 32k vocabulary), llama-3.2-1b, llama-3.1-8b.
std::optional<model_config> named_shape(std::string_view name);
std::vector<std::string> shape_names();

}  // namespace inflight
