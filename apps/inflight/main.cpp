// inflight: one command line with subcommands (serve, generate, bench, plan, make-model).
#include <CLI/CLI.hpp>

#include "apps/inflight/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"inflight: an LLM inference serving engine"};
  app.set_version_flag("--version", std::string("inflight ") + INFLIGHT_VERSION);
  app.require_subcommand(1);
  inflight::app::add_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
