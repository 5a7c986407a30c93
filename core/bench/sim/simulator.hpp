#pragma once
/// A discrete-event simulation of the engine on a virtual clock: requests arrive at
/// their workload times, the real scheduler, policy plugin and KV manager (prefix
/// caching included) run each step through core's step_loop, and a step-cost model says
/// how long the step took. Each sampled token is a dummy token; a request ends after its
/// output_len tokens: at its limit (max_tokens = output_len, as bench offline runs it),
/// or on its own below a higher limit (the dummy EOS token, or a stop string the
/// request's side sees and reports, as the engine's request actor does: one step later).
/// A scoring request (rerank) ends after its prompt with its score rows. A client may
/// cancel (cancel_after_s), each replica's admission gate may refuse a request (429), and
/// clients may keep a bounded number of calls in flight (max_concurrency).
/// No weights, no threads, no sleeping: the same inputs give the same figures on any
/// machine.
///
///   loop: submit every request that has arrived by `now`
///         nothing to do -> now = next arrival
///         else one step: now += cost(step's shape); its tokens and finishes happen at `now`
///
/// Several replicas of the engine behind a router: each replica has its own scheduler,
/// policy instance and KV pool and steps on its own, and the router (core/route: the
/// same router and routing-policy plugins as `serve --role router`) picks each
/// request's replica when it arrives, from what the replicas last reported. A replica
/// reports at the end of each of its steps (the engine reports after each grant, that
/// is one step sooner at most): its load and its prefix cache's change. A request the
/// router sends to a replica in the middle of a step waits for the next plan, at the
/// step's end, as it does in a stepping engine.
///
///   loop: every replica whose step ended by `now` reports; route every arrival by `now`;
///         each idle replica with work starts a step (busy until now + its cost);
///         now = the next arrival or step end

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/bench/bench_metrics.hpp"
#include "core/bench/dataset.hpp"
#include "core/bench/sim/cost_model.hpp"
#include "core/engine/sched/admission_gate.hpp"
#include "core/engine/sched/policy.hpp"
#include "core/engine/sched/scheduler.hpp"
#include "core/route/route_policy.hpp"

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
  /// Each replica's bound on requests waiting to start (server.max_waiting_requests,
  /// max_waiting_tokens): a request past it is refused (HTTP 429 queue_full, or 400 for a
  /// prompt over max_waiting_tokens). None: no bound.
  std::optional<admission_gate::limits> admission;
  /// Closed-loop clients (bench serve --max-concurrency): at most this many calls in
  /// flight (a call: the prompts of one group, a rerank call's documents; else one
  /// prompt); one that arrives while all are busy is sent when a call finishes, and its
  /// latencies count from then. 0 = open arrivals.
  int max_concurrency = 0;
  /// Time a cold engine takes before its first step (threads, first allocations),
  /// added to each replica's first step: what bench/sim_validate.py --replay measures.
  double first_step_delay_s = 0.0;
  /// Speculative decoding (scheduler.speculative): the chance that a drafted token is kept
  /// given that the ones before it were. The drafters run on the simulated tokens (all
  /// alike, so every lookup matches); each check keeps a seeded draw's worth of them. A
  /// verify step costs what the cost model says of its rows (drafted rows count as tokens).
  double spec_acceptance = 0.0;
};

/// The token every simulated step samples.
inline constexpr token_id dummy_token = 1;
/// The token that ends a request on its own (EOS) below its limit.
inline constexpr token_id dummy_eos_token = 2;
/// The score rows of a simulated scoring request (rerank's "yes" and "no").
inline constexpr token_id dummy_score_rows[2] = {3, 4};

/// One replica's share of a run.
struct replica_stats {
  std::uint64_t num_routed = 0;  ///< requests sent to it
  std::uint64_t num_steps = 0;
  double busy_s = 0.0;           ///< virtual seconds inside its steps
  scheduler_counters counters;
};

struct sim_result {
  /// One per prompt, in workload order, on the virtual clock (start_s = when it was sent: its arrival, or when a client slot freed).
  std::vector<bench::request_record> records;
  /// Per prompt: when it was first scheduled (< 0: never).
  std::vector<double> first_scheduled_s;
  bench::bench_summary summary;
  double duration_s = 0.0;    ///< virtual seconds from 0 to the end of the last step
  double busy_s = 0.0;        ///< virtual seconds inside steps (every replica's, summed)
  std::uint64_t num_steps = 0;  ///< every replica's
  double batch_size_sum = 0.0;  ///< sequences per step, summed over steps
  double kv_usage_sum = 0.0;    ///< KV usage after each step's grant, summed over steps
  scheduler_counters counters;  ///< summed over replicas; num_shed: requests the policy shed (failed records)
  int num_kv_blocks = 0;              ///< of every replica together
  int num_free_blocks_at_end = 0;     ///< after the last blocks went back (every replica)
  int num_kv_sequences_at_end = 0;    ///< sequences the KV managers still know at the end
  /// Per prompt: the replica it was sent to (0 with one replica).
  std::vector<int> replica_of;
  /// One per replica.
  std::vector<replica_stats> replicas;
  /// Routing-policy answers the router refused (it sent those requests to the least
  /// loaded replica instead).
  std::uint64_t num_refused_route_choices = 0;
  /// Failed records by cause: refused by an admission gate (HTTP 429), cancelled by
  /// their client.
  int num_rejected = 0;
  int num_cancelled = 0;
};

/// Runs `prompts` (token ids; output_len 0 = 16; arrival_s < 0 = 0) with
/// `pol`. A request the scheduler refuses (a prompt longer than the context) is a
/// failed record, not an error; an error is a bad configuration or a stalled engine.
result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, policy pol, const sim_config& config,
                            const step_cost_model& cost);

/// The same on one replica per entry of `policies` (each its own instance of the
/// scheduling policy; every replica has config's scheduler and KV pool and the same
/// cost model) behind `route`, which picks each request's replica; `route` may be
/// omitted only with one replica.
result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, std::vector<policy> policies,
                            std::optional<route_policy> route, const sim_config& config, const step_cost_model& cost);

}  // namespace inflight::sim
