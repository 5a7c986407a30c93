#pragma once
/// The actor runtime's settings for a compute-heavy process.

#include <caf/actor_system_config.hpp>

namespace inflight {

/// Idle actor workers block instead of polling, so that while a step runs the backend's
/// compute threads have the cores to themselves: CAF 0.17's default work-stealing
/// workers poll for jobs after every message (100 tries, then 500 more with 50 us
/// sleeps), waking thousands of times a second through every step. Work sharing has
/// idle workers wait on a condition variable that each enqueue signals. Two workers
/// suffice for the scheduler, the KV allocator and the request actors.
void configure_compute_runtime(caf::actor_system_config& cfg);

}  // namespace inflight
