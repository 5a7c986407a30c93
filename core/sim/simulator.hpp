#pragma once
/// A discrete-event simulation of the engine on a virtual clock: requests arrive at
/// their workload times, the real scheduler, policy plugin and KV manager (prefix
/// caching included) run each step through core's step_loop, and a step-cost model says
/// how long the step took. Each sampled token is a dummy token; each request ends at
/// its max_tokens (its workload output length). No weights, no threads, no sleeping:
/// the same inputs give the same figures on any machine.
///
///   loop: submit every request that has arrived by `now`
///         nothing to do -> now = next arrival
///         else one step: now += cost(step's shape); its tokens and finishes happen at `now`

#include <cstdint>
#include <string>
#include <vector>

#include "core/bench/bench_metrics.hpp"
#include "core/bench/dataset.hpp"
#include "core/error.hpp"
#include "core/sched/policy.hpp"
#include "core/sched/scheduler.hpp"
#include "core/sim/cost_model.hpp"

namespace inflight::sim {

struct sim_config {
  scheduler_config scheduler;
  int num_kv_blocks = 0;
  int block_size = 16;
  std::vector<double> percentiles = {50, 90, 99};
  bench::slo objectives;  ///< goodput counts requests meeting every objective set
  /// Latency targets every simulated request carries (what an SLO-aware policy plans
  /// for); 0 = none, then the scheduler's default_targets apply.
  slo_targets targets;
  /// As the engine: a request not started this long after its arrival fails with
  /// queue_timeout (server.max_queue_time_s), and one running longer than
  /// request_timeout_s is aborted (server.request_timeout_s); 0 = no limit.
  double max_queue_time_s = 0.0;
  double request_timeout_s = 0.0;
};

/// The token every simulated step samples.
inline constexpr token_id dummy_token = 1;

struct sim_result {
  /// One per prompt, in workload order, on the virtual clock (start_s = arrival).
  std::vector<bench::request_record> records;
  /// Per prompt: when it was first scheduled (< 0: never).
  std::vector<double> first_scheduled_s;
  bench::bench_summary summary;
  double duration_s = 0.0;    ///< virtual seconds from 0 to the end of the last step
  double busy_s = 0.0;        ///< virtual seconds inside steps
  std::uint64_t num_steps = 0;
  double batch_size_sum = 0.0;  ///< sequences per step, summed over steps
  double kv_usage_sum = 0.0;    ///< KV usage after each step's grant, summed over steps
  scheduler_counters counters;  ///< counters.num_shed: requests the policy shed (failed records)
  int num_kv_blocks = 0;
  int num_free_blocks_at_end = 0;     ///< after the last blocks went back
  int num_kv_sequences_at_end = 0;    ///< sequences the KV manager still knows at the end
};

/// Runs `prompts` (token ids; output_len = max_tokens, 0 = 16; arrival_s < 0 = 0) with
/// `pol`. A request the scheduler refuses (a prompt longer than the context) is a
/// failed record, not an error; an error is a bad configuration or a stalled engine.
result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, policy pol, const sim_config& config,
                            const step_cost_model& cost);

}  // namespace inflight::sim
