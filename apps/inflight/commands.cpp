#include "apps/inflight/commands.hpp"

#include <iostream>

#include "config/deployment_loader.hpp"

namespace inflight::app {

void add_commands(CLI::App& app) {
  add_serve_command(app);
  add_generate_command(app);
  add_make_model_command(app);
  auto* bench = app.add_subcommand("bench", "Benchmarks: forward steps, offline engine runs, serving, constrained decoding");
  bench->require_subcommand(1);
  add_bench_forward_command(*bench);
  add_bench_offline_command(*bench);
  add_bench_serve_command(*bench);
  add_bench_grammar_command(*bench);
  add_plan_command(app);
  add_perplexity_command(app);
  add_simulate_command(app);
}

deployment load_deployment_or_fail(const std::string& config_path, const std::vector<std::string>& overrides) {
  auto d = config::load_deployment(config_path, overrides);
  if (!d) fail(d.error().message);
  return *d;
}

void fail(const std::string& message) {
  std::cerr << "inflight: " << message << "\n";
  throw CLI::RuntimeError(1);
}

}  // namespace inflight::app
