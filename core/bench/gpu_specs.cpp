#include "core/bench/gpu_specs.hpp"

namespace inflight::bench {
namespace {

struct gpu_row {
  const char* name;
  double memory_gib;
  double bandwidth_tb_s;
  double tflop_s;
};

// NVIDIA datasheets: dense (not sparse) bf16 tensor-core peaks.
constexpr gpu_row gpus[] = {
    {"h100", 80, 3.35, 989},      {"h100-pcie", 80, 2.0, 756}, {"h200", 141, 4.8, 989},
    {"a100", 80, 2.039, 312},     {"a100-40gb", 40, 1.555, 312}, {"l40s", 48, 0.864, 362},
    {"l4", 24, 0.3, 121},         {"b200", 180, 8.0, 2250},
};

}  // namespace

std::optional<hardware_spec> named_gpu(std::string_view name) {
  for (const auto& g : gpus) {
    if (name != g.name) continue;
    hardware_spec s;
    s.memory_bytes = g.memory_gib * 1024 * 1024 * 1024;
    s.bandwidth_bytes_per_s = g.bandwidth_tb_s * 1e12;
    s.flops_per_s = g.tflop_s * 1e12;
    return s;
  }
  return std::nullopt;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : gpus) names.emplace_back(g.name);
  return names;
}

}  // namespace inflight::bench
