#include "core/bench/capacity_plan.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "core/engine/kv/block_pool.hpp"

namespace inflight::bench {

result<capacity_plan> make_capacity_plan(const plan_request& r) {
  const auto& m = r.model;
  if (m.num_layers <= 0 || m.num_kv_heads <= 0 || m.head_dim <= 0 || m.dim <= 0) {
    return make_error(errc::invalid_argument, "the model shape is incomplete (layers, heads, head_dim, hidden size)");
  }
  if (r.context <= 0 || !(r.weight_value_bytes > 0) || r.kv_value_bytes <= 0) {
    return make_error(errc::invalid_argument, "context, weight bytes and KV bytes must be positive");
  }
  const auto& hw = r.hardware;
  if (!(hw.memory_bytes > 0 && hw.bandwidth_bytes_per_s > 0 && hw.flops_per_s > 0)) {
    return make_error(errc::invalid_argument, "memory, bandwidth and flops must be positive");
  }
  if (!(hw.memory_utilization > 0 && hw.memory_utilization <= 1)) {
    return make_error(errc::invalid_argument, "memory utilization must be in (0, 1]");
  }
  capacity_plan p;
  p.num_parameters = m.num_parameters();
  p.num_active_parameters = m.num_active_parameters();
  p.weight_bytes = double(p.num_parameters) * r.weight_value_bytes;
  const double expert_bytes = double(p.num_parameters - m.num_active_parameters()) * r.weight_value_bytes *
                              (m.moe.enabled() ? double(m.moe.num_experts) / (m.moe.num_experts - m.moe.experts_per_token) : 0.0);
  p.kv_bytes_per_token = double(kv_bytes_per_token(m.num_layers, m.num_kv_heads, m.head_dim, r.kv_value_bytes));
  p.kv_read_per_sequence = p.kv_bytes_per_token / m.num_layers * double(m.kv_positions_read(r.context));
  p.usable_bytes = hw.memory_bytes * hw.memory_utilization;
  p.kv_budget_bytes = p.usable_bytes - p.weight_bytes;
  p.max_kv_tokens = p.kv_budget_bytes > 0 ? std::int64_t(std::floor(p.kv_budget_bytes / p.kv_bytes_per_token)) : 0;
  p.max_sequences = p.max_kv_tokens / r.context;
  p.prefill_flops = 2.0 * double(p.num_active_parameters) * r.context;
  p.prefill_s = p.prefill_flops / hw.flops_per_s;
  for (int b : r.batch_sizes) {
    decode_floor d;
    d.batch = b;
    if (m.moe.enabled()) {
      // Each of b tokens picks k of E experts: a step reads an expert unless all b passed it over.
      const double e = m.moe.num_experts, k = m.moe.experts_per_token;
      d.experts_read = 1.0 - std::pow(1.0 - k / e, double(b));
    }
    d.bytes_per_step = p.weight_bytes - expert_bytes * (1.0 - d.experts_read) + double(b) * p.kv_read_per_sequence;
    d.step_s = d.bytes_per_step / hw.bandwidth_bytes_per_s;
    d.tokens_per_s = b / d.step_s;
    d.fits = std::int64_t(b) * r.context <= p.max_kv_tokens;
    p.decode.push_back(d);
  }
  return p;
}

namespace {

double prefix_factor(std::string_view& rest) {
  struct prefix { std::string_view name; double factor; };
  static const prefix prefixes[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                                    {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}};
  for (const auto& p : prefixes) {
    if (rest.starts_with(p.name)) {
      rest.remove_prefix(p.name.size());
      return p.factor;
    }
  }
  return 1.0;
}

}  // namespace

result<double> parse_quantity(std::string_view text, const std::vector<std::string_view>& units) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value <= 0) {
    std::string message(text);
    message += " is not a positive quantity";
    return make_error(errc::invalid_argument, std::move(message));
  }
  std::string_view rest(end, std::size_t(text.data() + text.size() - end));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return value;
  // A bare unit that starts with a prefix letter ("P" of nothing) does not occur in ours.
  const double factor = prefix_factor(rest);
  if (rest.empty()) return value * factor;
  for (auto u : units) {
    if (rest == u) return value * factor;
  }
  std::string message(text);
  message += ": unknown unit (expected";
  for (auto u : units) message.append(" ").append(u);
  message += ")";
  return make_error(errc::invalid_argument, std::move(message));
}

}  // namespace inflight::bench
