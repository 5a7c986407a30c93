#pragma once
/// The scheduler actor: owns the queues (core `scheduler`) and runs the iteration
/// loop. Per step: plan -> one kv-allocator round trip -> executor -> apply -> route
/// tokens to request actors.

#include <atomic>
#include <mutex>
#include <memory>
#include <optional>
#include <unordered_map>

#include "actors/cache_feed.hpp"
#include "actors/messages.hpp"
#include "actors/step_feed.hpp"
#include "core/sched/admission_gate.hpp"

namespace inflight {

/// What the engine facade reads without touching the actor system: the scheduler
/// actor publishes it before it routes any event, so a sink that saw a request
/// finish also sees the snapshot that includes it.
struct shared_gauges {
  std::mutex mutex;
  engine_snapshot snapshot;
  step_feed steps;  ///< the live step feed (actors/step_feed.hpp)
  cache_feed caches;  ///< cache and load reports for routers (actors/cache_feed.hpp)
};

/// What the scheduler actor enforces around the core scheduler.
struct scheduler_actor_options {
  std::shared_ptr<admission_gate> gate;  ///< requests not yet started; engine::submit enters, the actor leaves
  double max_queue_time_s = 0.0;         ///< a request not started after this fails with queue_timeout (0 = none)
};

struct scheduler_state {
  struct route {
    request_actor actor;
    std::optional<double> first_scheduled_s;  ///< none: still waiting to start (inside the admission gate)
    int num_prompt_tokens = 0;
  };
  std::optional<scheduler> sched;
  executor_actor executor;
  kv_allocator_actor kv;
  std::shared_ptr<engine_metrics> metrics;
  std::shared_ptr<shared_gauges> gauges;
  scheduler_actor_options options;
  std::unordered_map<seq_id, route> routes;
  bool is_accepting = true;
  engine_snapshot totals;
  step_recorder recorder;
  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler_fn(scheduler_actor::stateful_pointer<scheduler_state> self,
                                            std::shared_ptr<std::optional<scheduler>> sched, executor_actor executor,
                                            kv_allocator_actor kv, std::shared_ptr<engine_metrics> metrics,
                                            std::shared_ptr<shared_gauges> gauges, scheduler_actor_options options);

}  // namespace inflight
