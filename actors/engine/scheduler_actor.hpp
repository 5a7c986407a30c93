#pragma once
/// The scheduler actor: owns core's step_loop (the scheduler, queue expiry, deadlines,
/// the admission gate's releases) and carries its phases' messages. Per step:
/// open -> one kv-allocator round trip -> executor -> apply -> route tokens to request
/// actors. What a step does is step_loop's; this actor sends, receives and publishes.

#include <atomic>
#include <mutex>
#include <memory>
#include <optional>
#include <unordered_map>

#include "actors/cache_feed.hpp"
#include "actors/engine/messages.hpp"
#include "actors/step_feed.hpp"
#include "core/engine/sched/step_loop.hpp"

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

struct scheduler_state {
  std::optional<step_loop> loop;
  executor_actor executor;
  kv_allocator_actor kv;
  std::shared_ptr<engine_metrics> metrics;
  std::shared_ptr<shared_gauges> gauges;
  std::unordered_map<seq_id, request_actor> routes;  ///< each live sequence's request actor
  engine_snapshot totals;  ///< time and batch sums; the step counts are the loop's
  step_recorder recorder;
  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler_fn(scheduler_actor::stateful_pointer<scheduler_state> self,
                                            std::shared_ptr<std::optional<step_loop>> loop, executor_actor executor,
                                            kv_allocator_actor kv, std::shared_ptr<engine_metrics> metrics,
                                            std::shared_ptr<shared_gauges> gauges);

}  // namespace inflight
