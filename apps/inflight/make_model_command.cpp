// `inflight make-model`: writes a random-weight model of a given shape.
#include "apps/inflight/commands.hpp"

namespace inflight::app {

void add_make_model_command(CLI::App& app) {
  (void)app;
}

}  // namespace inflight::app
