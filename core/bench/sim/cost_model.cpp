#include "core/bench/sim/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace inflight::sim {

std::string constant_cost_model::describe() const {
  char line[64];
  std::snprintf(line, sizeof line, "constant: %.3f ms per step", seconds_ * 1e3);
  return line;
}

namespace {

bool is_fraction(double v) { return v > 0.0 && v <= 1.0; }

}  // namespace

result<roofline_cost_model> roofline_cost_model::try_create(const model_config& m, const bench::hardware_spec& hw,
                                                            const roofline_options& o) {
  if (!is_fraction(o.bandwidth_efficiency) || !is_fraction(o.compute_efficiency))
    return make_error(errc::invalid_argument, "roofline: efficiencies must be in (0, 1]");
  if (!(o.step_overhead_s >= 0.0) || !std::isfinite(o.step_overhead_s))
    return make_error(errc::invalid_argument, "roofline: the step overhead must be a number >= 0");
  // make_capacity_plan checks the shape, the figures and the byte sizes, and computes
  // the weight and KV bytes the same way `inflight plan` prints them.
  bench::plan_request request;
  request.model = m;
  request.hardware = hw;
  request.weight_value_bytes = o.weight_value_bytes;
  request.kv_value_bytes = o.kv_value_bytes;
  request.batch_sizes.clear();
  auto plan = bench::make_capacity_plan(request);
  if (!plan) return std::unexpected(plan.error());
  if (m.num_heads <= 0) return make_error(errc::invalid_argument, "roofline: the model has no attention heads");
  roofline_cost_model c;
  c.num_parameters_ = double(plan->num_parameters);
  c.weight_bytes_ = plan->weight_bytes;
  c.kv_bytes_per_token_ = plan->kv_bytes_per_token;
  c.attention_flops_per_pair_ = 4.0 * m.num_layers * m.num_heads * m.head_dim;
  c.bandwidth_ = hw.bandwidth_bytes_per_s * o.bandwidth_efficiency;
  c.flops_ = hw.flops_per_s * o.compute_efficiency;
  c.options_ = o;
  c.hardware_ = hw;
  return c;
}

roofline_cost roofline_cost_model::cost_of(const step_shape& shape) const {
  roofline_cost c;
  double num_context = 0.0, num_pairs = 0.0;
  for (const auto& s : shape.seqs) {
    const double n = s.num_tokens, start = s.num_context_tokens - s.num_tokens;
    num_context += s.num_context_tokens;
    num_pairs += n * start + n * (n + 1.0) / 2.0;  // token i of the chunk attends to start + i + 1 keys
  }
  c.bytes = weight_bytes_ + num_context * kv_bytes_per_token_;
  c.flops = 2.0 * num_parameters_ * shape.num_tokens() + attention_flops_per_pair_ * num_pairs;
  c.memory_s = c.bytes / bandwidth_;
  c.compute_s = c.flops / flops_;
  c.seconds = std::max(c.memory_s, c.compute_s) + options_.step_overhead_s;
  return c;
}

std::string roofline_cost_model::describe() const {
  char line[256];
  std::snprintf(line, sizeof line,
                "roofline: %.2f TB/s x %.2f, %.0f TFLOP/s x %.2f, %.2f ms overhead per step; weights %.2f GB, "
                "KV %.0f B per token",
                hardware_.bandwidth_bytes_per_s / 1e12, options_.bandwidth_efficiency, hardware_.flops_per_s / 1e12,
                options_.compute_efficiency, options_.step_overhead_s * 1e3, weight_bytes_ / 1e9, kv_bytes_per_token_);
  return line;
}

}  // namespace inflight::sim
