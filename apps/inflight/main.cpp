// inflight: one command line with subcommands (serve, generate, bench, plan, make-model).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <unistd.h>

#include "apps/inflight/commands.hpp"

namespace {

/// OpenMP threads that spin after a parallel region steal the cores OpenBLAS and the
/// actors need; the wait policy is read when libgomp loads, before main, so it is set
/// here once and the process re-executes itself. An explicit setting is respected.
void use_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

}  // namespace

int main(int argc, char** argv) {
  use_passive_openmp_wait(argv);
  CLI::App app{"inflight: an LLM inference serving engine"};
  app.set_version_flag("--version", std::string("inflight ") + INFLIGHT_VERSION);
  app.require_subcommand(1);
  inflight::app::add_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
