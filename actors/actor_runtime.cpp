#include "actors/actor_runtime.hpp"

#include <caf/atom.hpp>

namespace inflight {

void configure_compute_runtime(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", std::size_t(2));
}

}  // namespace inflight
