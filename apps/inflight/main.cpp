// inflight: one command line with subcommands (serve, generate, bench, plan, make-model).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <unistd.h>

#include "apps/inflight/commands.hpp"

namespace {

/// OpenMP threads that spin long after a parallel region steal the cores OpenBLAS and
/// the actors need, but threads that sleep at once turn each of the forward pass's
/// barriers into a futex round trip (about 10% of a one-sequence decode step here). So
/// they spin briefly, GOMP_SPINCOUNT = 10000 (about 0.1 ms), then sleep. Both are read
/// when libgomp loads, before main, so they are set here once and the process
/// re-executes itself. An explicit OMP_WAIT_POLICY (or GOMP_SPINCOUNT) is respected.
void use_short_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  setenv("GOMP_SPINCOUNT", "10000", 0);
  execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

}  // namespace

int main(int argc, char** argv) {
  use_short_openmp_wait(argv);
  CLI::App app{"inflight: an LLM inference serving engine"};
  app.set_version_flag("--version", std::string("inflight ") + INFLIGHT_VERSION);
  app.require_subcommand(1);
  inflight::app::add_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
