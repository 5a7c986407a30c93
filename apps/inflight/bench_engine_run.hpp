#pragma once
// One offline benchmark run: the engine in this process, a workload submitted at its
// scheduled times, every request's timeline recorded on this process's clock.

#include <vector>

#include "actors/engine/engine.hpp"
#include "core/bench/sim/step_profile.hpp"
#include "core/grammar/token_index.hpp"
#include "core/bench/bench_metrics.hpp"
#include "core/bench/dataset.hpp"

namespace inflight::app {

struct engine_run {
  std::vector<bench::request_record> records;
  double duration_s = 0.0;
  engine_snapshot snapshot;   ///< at the end of the run (counters start at zero with the engine)
  long long num_feed_events = 0;  ///< with a step-feed reader: `step` events it encoded
  long long num_feed_bytes = 0;   ///< and their size in bytes
  histogram_counts mask_seconds;  ///< the engine's grammar_mask_seconds at the end (one per constrained sequence-step)
  /// With step recording: every step's shape and time inside the engine, plan to applied
  /// result (a step profile's samples of source "engine", core/bench/sim/step_profile.hpp).
  std::vector<sim::profile_sample> steps;
};

/// How run_engine_workload watches the engine's steps (one step sink at a time).
enum class step_watch {
  none,
  feed,    ///< one reader of the step feed, encoding every event as GET /v1/engine/events would
  record,  ///< every step's shape and time into engine_run::steps
};

/// Starts an engine for `d` on `model`, submits `prompts` (greedy, ignore EOS) at their
/// arrival times (< 0 counts as 0), waits for all, shuts the engine down, watching its
/// steps as `watch` says (a feed reader: the cost of one UI watching).
/// `grammars`, when not empty, holds one compiled constraint per prompt (null = none).
result<engine_run> run_engine_workload(const deployment& d, const loaded_model& model,
                                       const std::vector<bench::bench_prompt>& prompts,
                                       step_watch watch = step_watch::none,
                                       const std::vector<std::shared_ptr<const token_index>>& grammars = {});

}  // namespace inflight::app
