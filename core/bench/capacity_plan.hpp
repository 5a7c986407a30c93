#pragma once
/// Capacity planning from a model's shape and a GPU's datasheet: weight and KV bytes,
/// how many tokens and sequences fit, and the floors physics puts on step times
/// (decode is bound by memory bandwidth, prefill by compute).

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/model_config.hpp"

namespace inflight::bench {

struct hardware_spec {
  double memory_bytes = 80.0 * 1024 * 1024 * 1024;  ///< device memory
  double memory_utilization = 0.9;                  ///< fraction for weights + KV
  double bandwidth_bytes_per_s = 3.35e12;           ///< memory bandwidth
  double flops_per_s = 989e12;                      ///< dense bf16 peak
};

struct plan_request {
  model_config model;
  hardware_spec hardware;
  int context = 2048;     ///< tokens of KV each sequence holds
  double weight_value_bytes = 2.0;  ///< bytes per weight (a quantized type's block bytes / block values)
  int kv_value_bytes = 2;           ///< bytes per KV element
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256};
};

struct decode_floor {
  int batch = 0;
  double bytes_per_step = 0.0;   ///< weights read + batch x KV read per sequence
  double experts_read = 1.0;     ///< a mixture: the share of its experts a step reads (1: dense)
  double step_s = 0.0;           ///< bytes_per_step / bandwidth
  double tokens_per_s = 0.0;     ///< batch / step_s
  bool fits = false;             ///< batch x context tokens fit in the KV budget
};

struct capacity_plan {
  std::int64_t num_parameters = 0;
  std::int64_t num_active_parameters = 0;  ///< read for one token (a mixture: its chosen experts only)
  double weight_bytes = 0.0;           ///< num_parameters x weight value bytes
  double kv_bytes_per_token = 0.0;     ///< 2 (K and V) x layers x KV heads x head_dim x KV value bytes
  /// KV bytes a decode step reads per sequence at `context`: a windowed layer reads at
  /// most its window (sliding windows), a global one the whole context.
  double kv_read_per_sequence = 0.0;
  double usable_bytes = 0.0;           ///< memory x utilization
  double kv_budget_bytes = 0.0;        ///< usable - weights (may be negative: does not fit)
  std::int64_t max_kv_tokens = 0;      ///< kv_budget / kv_bytes_per_token
  std::int64_t max_sequences = 0;      ///< max_kv_tokens / context
  double prefill_flops = 0.0;          ///< 2 x active params x context (attention excluded)
  double prefill_s = 0.0;              ///< prefill_flops / flops_per_s, one prompt of `context` tokens
  std::vector<decode_floor> decode;
};

result<capacity_plan> make_capacity_plan(const plan_request& request);

/// Parses a quantity with an optional SI (k, M, G, T, P) or binary (Ki, Mi, Gi, Ti)
/// prefix and the given unit suffixes: "80GiB", "3.35TB/s", "989TFLOP/s", "1.5e12".
result<double> parse_quantity(std::string_view text, const std::vector<std::string_view>& units);

}  // namespace inflight::bench
