#pragma once
/// Datasheet figures of common GPUs (dense bf16 / fp16 tensor FLOP/s without sparsity,
/// memory bandwidth, memory size), for capacity plans and the simulator's roofline
/// cost model. Every figure can be overridden by the caller.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bench/capacity_plan.hpp"

namespace inflight::bench {

/// h100 (SXM), h100-pcie, h200, a100 (SXM 80 GB), a100-40gb, l40s, l4, b200; memory
/// utilization is left at its default.
std::optional<hardware_spec> named_gpu(std::string_view name);
std::vector<std::string> gpu_names();

}  // namespace inflight::bench
