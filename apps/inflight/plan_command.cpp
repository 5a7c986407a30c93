// `inflight plan`: capacity planning for a deployment's model on a stated GPU: weight
// and KV bytes, what fits, and the bandwidth / compute floors of step times.
#include <cstdio>

#include "apps/inflight/commands.hpp"
#include "config/deployment_loader.hpp"
#include "core/bench/capacity_plan.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_loader.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight::app {
namespace {

struct plan_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string shape;
  std::string memory = "80GiB";
  std::string bandwidth = "3.35TB/s";
  std::string flops = "989TFLOP/s";
  double utilization = 0.0;  // 0 = the deployment's engine.gpu_memory_utilization
  int context = 2048;
  std::string weight_dtype = "bf16";
  std::string kv_dtype = "bf16";
};

/// The shape: --shape, else the deployment's model (dummy shape, config.json, or checkpoint).
model_config plan_model(const plan_options& o, const deployment& d) {
  if (!o.shape.empty()) {
    auto c = named_shape(o.shape);
    if (!c) fail("unknown shape '" + o.shape + "'");
    return *c;
  }
  if (o.config_path.empty()) fail("give --config FILE or --shape NAME");
  const auto format = resolve_format(d.model);
  if (format == "dummy" && d.model.config_json.empty()) return dummy_model_config(d.model.dummy);
  if (format == "dummy" || format == "hf") {
    const auto path = !d.model.config_json.empty() ? std::filesystem::path(d.model.config_json)
                                                   : std::filesystem::path(d.model.path) / "config.json";
    auto c = try_load_hf_config(path);
    if (!c) fail(c.error().message);
    return *c;
  }
  auto settings = d.model;
  settings.load_mode = "mmap";  // only the config is read: no need for the weights in memory
  auto m = load_model(settings);
  if (!m) fail(m.error().message);
  return m->weights->config;
}

double quantity(const std::string& text, const std::vector<std::string_view>& units, const char* what) {
  auto v = bench::parse_quantity(text, units);
  if (!v) fail(std::string(what) + ": " + v.error().message);
  return *v;
}

void print_plan(const plan_options& o, const model_config& m, const bench::plan_request& r, const bench::capacity_plan& p) {
  const double gb = 1e9;
  std::printf("model: dim %d, MLP %d, %d layers, %d heads (%d KV), head_dim %d, vocab %d%s\n", m.dim, m.hidden_dim,
              m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim, m.vocab_size, m.tied_embeddings ? ", tied" : "");
  std::printf("hardware: %s memory x %.2f utilization, %s, %s; context %d; weights %s, KV %s\n\n", o.memory.c_str(),
              r.hardware.memory_utilization, o.bandwidth.c_str(), o.flops.c_str(), r.context, o.weight_dtype.c_str(),
              o.kv_dtype.c_str());
  std::printf("weights       = params x bytes per weight = %lld x %.4g = %.2f GB\n", (long long)p.num_parameters,
              r.weight_value_bytes, p.weight_bytes / gb);
  if (m.moe.enabled()) {
    std::printf("experts       = %d of %d per token, each %d wide: %lld parameters active per token\n",
                m.moe.experts_per_token, m.moe.num_experts, m.moe.expert_hidden_dim, (long long)p.num_active_parameters);
  }
  std::printf("KV per token  = 2 x layers x KV heads x head_dim x KV bytes = 2 x %d x %d x %d x %d = %.0f B (%.1f KiB)\n",
              m.num_layers, m.num_kv_heads, m.head_dim, r.kv_value_bytes, p.kv_bytes_per_token, p.kv_bytes_per_token / 1024);
  if (m.sliding_window > 0) {
    int windowed = 0;
    for (int l = 0; l < m.num_layers; ++l) windowed += m.layer_windowed(l) ? 1 : 0;
    const double full = p.kv_bytes_per_token * r.context;
    std::printf("windows       = %d of %d layers read the last %d keys: a step reads %.1f%% of the KV at context %d;\n"
                "                a cache that dropped keys out of every window would hold as much, %.1f MB less per "
                "sequence (not done: every layer keeps the whole context)\n",
                windowed, m.num_layers, m.sliding_window, 100.0 * p.kv_read_per_sequence / full, r.context,
                (full - p.kv_read_per_sequence) / 1e6);
  }
  std::printf("KV budget     = memory x utilization - weights = %.2f - %.2f = %.2f GB\n", p.usable_bytes / gb,
              p.weight_bytes / gb, p.kv_budget_bytes / gb);
  std::printf("KV tokens     = KV budget / KV per token = %lld\n", (long long)p.max_kv_tokens);
  std::printf("sequences     = KV tokens / context = %lld of %d tokens\n", (long long)p.max_sequences, r.context);
  std::printf("prefill floor = 2 x active params x tokens / FLOP/s = %.3f TFLOP / %s = %.2f ms for %d tokens (%.0f tokens/s)\n\n",
              p.prefill_flops / 1e12, o.flops.c_str(), p.prefill_s * 1e3, r.context, r.context / p.prefill_s);
  std::printf("decode floor: one step reads every weight%s and the batch's KV once%s\n",
              m.moe.enabled() ? " (of the experts, those its tokens chose)" : "",
              m.sliding_window > 0 ? " (a windowed layer's last keys only)" : "");
  std::printf("  step = (weights read + batch x KV read per sequence) / bandwidth;  tokens/s = batch / step\n");
  if (m.moe.enabled()) std::printf("  experts read = 1 - (1 - k / E)^batch of them\n");
  std::printf("%8s %14s %12s %14s %8s%s\n", "batch", "bytes/step GB", "step ms", "tokens/s", "fits",
              m.moe.enabled() ? "  experts read" : "");
  for (const auto& row : p.decode) {
    std::printf("%8d %14.2f %12.3f %14.0f %8s", row.batch, row.bytes_per_step / gb, row.step_s * 1e3,
                row.tokens_per_s, row.fits ? "yes" : "no");
    if (m.moe.enabled()) std::printf("  %12.0f%%", 100.0 * row.experts_read);
    std::printf("\n");
  }
}

void run_plan(const plan_options& o) {
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  bench::plan_request r;
  r.model = plan_model(o, d);
  r.context = o.context;
  r.weight_value_bytes = value_bytes(o.weight_dtype, "--weight-dtype");
  const double kv_bytes = value_bytes(o.kv_dtype, "--kv-dtype");
  if (kv_bytes != 2.0 && kv_bytes != 4.0) fail("--kv-dtype: the KV cache is f32, f16 or bf16");
  r.kv_value_bytes = int(kv_bytes);
  r.hardware.memory_bytes = quantity(o.memory, {"B"}, "--gpu-memory");
  r.hardware.bandwidth_bytes_per_s = quantity(o.bandwidth, {"B/s"}, "--bandwidth");
  r.hardware.flops_per_s = quantity(o.flops, {"FLOP/s", "FLOPS", "FLOP"}, "--flops");
  r.hardware.memory_utilization = o.utilization > 0 ? o.utilization : d.engine.gpu_memory_utilization;
  auto p = bench::make_capacity_plan(r);
  if (!p) fail(p.error().message);
  print_plan(o, r.model, r, *p);
}

}  // namespace

double value_bytes(const std::string& name, const char* option) {
  const auto dtype = try_parse_weight_dtype(name);
  if (!dtype) fail(std::string(option) + ": unknown type '" + name + "' (" + weight_dtype_names() + ")");
  const auto layout = layout_of(*dtype);
  return double(layout.block_bytes) / layout.block_values;
}

void add_plan_command(CLI::App& app) {
  auto o = std::make_shared<plan_options>();
  auto* cmd = app.add_subcommand("plan", "Capacity planner: memory, KV capacity and step-time floors on a GPU");
  cmd->add_option("--config", o->config_path, "deployment TOML (its model's shape)");
  cmd->add_option("--set", o->overrides, "override a deployment key (key=value), repeatable");
  cmd->add_option("--shape", o->shape, "a named shape instead of the deployment's model (bench-20M, llama-3.1-8b, ...)");
  cmd->add_option("--gpu-memory", o->memory, "device memory")->capture_default_str();
  cmd->add_option("--bandwidth", o->bandwidth, "memory bandwidth")->capture_default_str();
  cmd->add_option("--flops", o->flops, "dense peak FLOP/s at the dtype")->capture_default_str();
  cmd->add_option("--utilization", o->utilization, "fraction of memory for weights + KV (default: the deployment's)");
  cmd->add_option("--context", o->context, "tokens each sequence holds")->capture_default_str();
  cmd->add_option("--weight-dtype", o->weight_dtype, "weight type: " + weight_dtype_names())->capture_default_str();
  cmd->add_option("--kv-dtype", o->kv_dtype, "KV cache element type: f32 | f16 | bf16")->capture_default_str();
  cmd->callback([o] { run_plan(*o); });
}

}  // namespace inflight::app
