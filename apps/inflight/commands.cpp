#include "apps/inflight/commands.hpp"

#include <charconv>
#include <cmath>
#include <iostream>
#include <optional>

#include "apps/inflight/hub_models.hpp"
#include "config/deployment_loader.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_family.hpp"

namespace inflight::app {

void add_commands(CLI::App& app) {
  add_serve_command(app);
  add_generate_command(app);
  add_pull_command(app);
  add_make_model_command(app);
  auto* bench = app.add_subcommand("bench", "Benchmarks: forward steps, offline engine runs, serving, constrained decoding");
  bench->require_subcommand(1);
  add_bench_forward_command(*bench);
  add_bench_offline_command(*bench);
  add_bench_serve_command(*bench);
  add_bench_grammar_command(*bench);
  add_bench_profile_command(*bench);
  add_plan_command(app);
  add_perplexity_command(app);
  add_simulate_command(app);
}

namespace {

/// The number `text` holds in full, or nullopt ("inf" and "infinity" are numbers here).
std::optional<double> parse_double(const std::string& text) {
  if (text == "inf" || text == "infinity") return INFINITY;
  double v = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

CLI::Validator positive_number(bool allow_inf) {
  return CLI::Validator(
      [allow_inf](std::string& text) -> std::string {
        const auto v = parse_double(text);
        if (!v || std::isnan(*v)) return "'" + text + "' is not a number";
        if (std::isinf(*v) && !allow_inf) return "'" + text + "' is not finite";
        if (!(*v > 0)) return "'" + text + "' is not above 0";
        return {};
      },
      allow_inf ? "POSITIVE|inf" : "POSITIVE");
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_double(text);
        if (!v || !std::isfinite(*v)) return "'" + text + "' is not a finite number";
        if (*v < 0) return "'" + text + "' is below 0";
        return {};
      },
      "NONNEGATIVE");
}

deployment load_deployment_or_fail(const std::string& config_path, const std::vector<std::string>& overrides) {
  auto d = config::load_deployment(config_path, overrides);
  if (!d) fail(d.error().message);
  fetch_hub_models_or_fail(*d);
  return *d;
}

void fetch_hub_models_or_fail(deployment& d) {
  if (auto ok = try_resolve_hub_models(d); !ok) fail(ok.error().message);
}

void use_named_shape(deployment& d, const std::string& shape) {
  auto c = named_shape(shape);
  if (!c) fail("unknown shape '" + shape + "'");
  d.model.path.clear();
  d.model.format = "dummy";
  d.model.config_json.clear();
  auto& s = d.model.dummy;
  s.hidden_size = c->dim, s.intermediate_size = c->hidden_dim, s.num_layers = c->num_layers;
  s.num_heads = c->num_heads, s.num_kv_heads = c->num_kv_heads, s.head_dim = c->head_dim;
  s.vocab_size = c->vocab_size, s.max_position = c->max_seq_len, s.rope_theta = c->rope_theta;
  s.tied_embeddings = c->tied_embeddings;
  s.family = std::string(family_of(*c).name);
  s.num_experts = c->moe.num_experts, s.experts_per_token = c->moe.experts_per_token;
  s.expert_intermediate_size = c->moe.expert_hidden_dim;
}

route_settings parse_route_settings(const std::vector<std::string>& texts) {
  route_settings settings;
  for (const auto& kv : texts) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) fail("--route-setting '" + kv + "': expected key=value");
    settings.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return settings;
}

void fail(const std::string& message) {
  std::cerr << "inflight: " << message << "\n";
  throw CLI::RuntimeError(1);
}

}  // namespace inflight::app
