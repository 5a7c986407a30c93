#include "apps/inflight/commands.hpp"

#include <iostream>

namespace inflight::app {

void add_commands(CLI::App& app) {
  add_serve_command(app);
  add_generate_command(app);
  add_make_model_command(app);
  auto* bench = app.add_subcommand("bench", "Benchmarks: forward steps, offline engine runs, serving");
  bench->require_subcommand(1);
  add_bench_forward_command(*bench);
  add_bench_offline_command(*bench);
  add_bench_serve_command(*bench);
  add_plan_command(app);
}

void fail(const std::string& message) {
  std::cerr << "inflight: " << message << "\n";
  throw CLI::RuntimeError(1);
}

}  // namespace inflight::app
