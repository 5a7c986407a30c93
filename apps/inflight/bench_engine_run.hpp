#pragma once
// One offline benchmark run: the engine in this process, a workload submitted at its
// scheduled times, every request's timeline recorded on this process's clock.

#include <vector>

#include "actors/engine.hpp"
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
};

/// Starts an engine for `d` on `model`, submits `prompts` (greedy, ignore EOS) at their
/// arrival times (< 0 counts as 0), waits for all, shuts the engine down. With
/// `with_step_feed`, one reader subscribes to the step feed for the whole run and encodes
/// every event as GET /v1/engine/events would send it (the cost of one UI watching).
/// `grammars`, when not empty, holds one compiled constraint per prompt (null = none).
result<engine_run> run_engine_workload(const deployment& d, const loaded_model& model,
                                       const std::vector<bench::bench_prompt>& prompts,
                                       bool with_step_feed = false,
                                       const std::vector<std::shared_ptr<const token_index>>& grammars = {});

}  // namespace inflight::app
