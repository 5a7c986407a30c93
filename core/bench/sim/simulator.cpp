#include "core/bench/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <queue>
#include <random>
#include <unordered_map>

#include "core/engine/sched/step_loop.hpp"
#include "core/route/router.hpp"

namespace inflight::sim {
namespace {

/// Consecutive steps that run nothing while work waits before the run counts as stalled.
constexpr int max_idle_steps = 3;

/// What the simulation saw of one request, on the virtual clock.
struct request_trace {
  double arrival_s = 0.0;
  double first_scheduled_s = -1.0;
  std::vector<double> token_times_s;
  bool is_finished = false;
  double finished_s = 0.0;
  finish_reason reason = finish_reason::stop;
  std::string error;
  std::optional<errc> error_code;  // why it failed, as the server would answer it (code, HTTP status)
  int num_output_tokens = 0;
  int num_cached_tokens = 0;
};

/// One engine replica: its own step loop (scheduler, policy, KV pool) on its own clock.
struct replica {
  replica(step_loop l, std::shared_ptr<double> c) : loop(std::move(l)), clock(std::move(c)) {}
  step_loop loop;
  std::shared_ptr<double> clock;     // what its scheduler reads
  std::shared_ptr<admission_gate> gate;  // none: no bound
  bool is_busy = false;              // a step runs until free_at
  double free_at = 0.0;
  std::vector<std::size_t> settled;  // prompts that finished in the step: settled at its end
  // Requests whose last token (a stop string's) came in its last step: their side's stop
  // reaches the loop while the next step runs, as the request actor's does.
  std::vector<seq_id> stopping;
  replica_stats stats;
};

class simulation {
 public:
  simulation(const std::vector<bench::bench_prompt>& prompts, const step_cost_model& cost,
             std::vector<replica> replicas, std::optional<route_policy> route, const sim_config& config)
      : prompts_(prompts), cost_(cost), replicas_(std::move(replicas)), targets_(config.targets),
        timeout_s_(config.request_timeout_s), max_concurrency_(config.max_concurrency),
        first_step_delay_s_(config.first_step_delay_s), spec_acceptance_(config.spec_acceptance),
        spec_rng_(config.scheduler.seed ^ 0x5eedULL), traces_(prompts.size()),
        replica_of_(prompts.size(), 0), client_of_(prompts.size()) {
    if (route) {
      router_.emplace(std::move(*route), int(replicas_.size()), config.block_size);
      blocks_.resize(prompts.size());
    }
    order_.resize(prompts.size());
    std::iota(order_.begin(), order_.end(), std::size_t(0));
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return arrival(a) < arrival(b); });
    // A client call: the prompts of one group (a rerank call's documents), else one each.
    std::unordered_map<int, std::size_t> call_of_group;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      traces_[i].arrival_s = arrival(i);
      const int g = prompts[i].group;
      auto it = g >= 0 ? call_of_group.find(g) : call_of_group.end();
      if (it == call_of_group.end()) {
        client_of_[i] = num_left_.size();
        num_left_.push_back(0);
        if (g >= 0) call_of_group[g] = client_of_[i];
      } else {
        client_of_[i] = it->second;
      }
      ++num_left_[client_of_[i]];
    }
    is_sent_.assign(num_left_.size(), false);
  }

  result<void> run();
  sim_result finish(const sim_config& config);

 private:
  double arrival(std::size_t i) const { return std::max(0.0, prompts_[i].arrival_s); }
  /// The next arrival must wait: its call would be one more than max_concurrency in flight.
  bool is_held(std::size_t i) const {
    return max_concurrency_ > 0 && !is_sent_[client_of_[i]] && num_in_flight_ >= max_concurrency_;
  }
  void settle(int k, std::size_t i);
  /// The output ends on its own (EOS or a stop string) below a higher limit.
  bool ends_on_own(std::size_t i) const { return !prompts_[i].is_score && prompts_[i].max_tokens > output_len(i); }
  int output_len(std::size_t i) const { return prompts_[i].output_len > 0 ? prompts_[i].output_len : 16; }
  void cancel_due();
  result<void> report(int k, bool is_full);
  result<void> end_steps();
  result<void> route_arrived();
  void submit(int k, std::size_t i);
  result<void> start_steps();
  result<bool> run_step(int k);
  result<step_result> execute(replica& r, const step_plan& plan);
  void record(const std::vector<seq_event>& events, std::vector<std::size_t>* settled);
  bench::request_record record_of(std::size_t i) const;

  const std::vector<bench::bench_prompt>& prompts_;
  const step_cost_model& cost_;
  std::vector<replica> replicas_;
  std::optional<router> router_;   // with more than one replica
  slo_targets targets_;            // of every request
  double timeout_s_ = 0.0;         // of every request
  int max_concurrency_ = 0;        // calls in flight at most; 0 = open arrivals
  double first_step_delay_s_ = 0.0;  // added to each replica's first step
  double spec_acceptance_ = 0.0;     // a drafted token's chance to be kept
  std::mt19937_64 spec_rng_;         // the draws that keep them
  std::vector<request_trace> traces_;
  std::vector<int> replica_of_;    // per prompt
  std::vector<std::size_t> client_of_;  // per prompt: its call
  std::vector<int> num_left_;           // per call: prompts not finished
  std::vector<bool> is_sent_;           // per call: its first prompt was sent
  int num_in_flight_ = 0;               // calls sent and not finished
  std::vector<std::vector<block_hash>> blocks_;  // per prompt, as the router hashes it
  std::vector<std::size_t> order_;  // prompt indices by arrival
  std::size_t next_ = 0;            // into order_
  // The cancels to come, earliest first: (time, prompt), queued when the prompt is sent.
  std::priority_queue<std::pair<double, std::size_t>, std::vector<std::pair<double, std::size_t>>, std::greater<>>
      cancels_;
  std::vector<std::size_t> due_cancels_;  // come in during their replica's step: applied at its end
  int num_rejected_ = 0, num_cancelled_ = 0;
  double now_ = 0.0;
  std::optional<error> cost_error_;
  double batch_size_sum_ = 0.0, kv_usage_sum_ = 0.0;
};

result<void> simulation::run() {
  for (std::size_t k = 0; k < replicas_.size(); ++k) {
    if (auto ok = report(int(k), true); !ok) return ok;  // as a router subscribing
  }
  for (;;) {
    if (auto ok = end_steps(); !ok) return ok;
    if (auto ok = route_arrived(); !ok) return ok;
    cancel_due();
    if (auto ok = start_steps(); !ok) return ok;
    double next = INFINITY;
    // An arrival held for a free client slot waits for a finish, which a step brings.
    if (next_ < order_.size() && (arrival(order_[next_]) > now_ || !is_held(order_[next_])))
      next = arrival(order_[next_]);
    // A cancel for a request that has finished is no event: the clock does not run to it.
    while (!cancels_.empty() && traces_[cancels_.top().second].is_finished) cancels_.pop();
    if (!cancels_.empty()) next = std::min(next, cancels_.top().first);
    for (const auto& r : replicas_) {
      if (r.is_busy) next = std::min(next, r.free_at);
    }
    if (!std::isfinite(next)) return {};  // nothing runs and nothing more arrives
    now_ = std::max(now_, next);
  }
}

/// Replica k's load and its prefix cache's change (the whole cache when `is_full`), to the router.
result<void> simulation::report(int k, bool is_full) {
  auto& r = replicas_[std::size_t(k)];
  auto delta = r.loop.take_cache_delta();
  if (!router_) return {};
  const auto& sched = r.loop.sched();
  engine_report rep;
  rep.is_full = is_full;
  rep.added = is_full ? r.loop.kv().cached_hashes() : std::move(delta.added);
  if (!is_full) rep.evicted = std::move(delta.evicted);
  rep.num_waiting = sched.num_waiting();
  rep.num_running = sched.num_running();
  rep.num_free_blocks = r.loop.kv().num_free_blocks();
  rep.num_total_blocks = sched.kv().num_blocks;
  rep.block_size = sched.kv().block_size;
  return router_->apply_report(k, rep);
}

/// Every replica whose step has ended by now: the router releases the requests that
/// finished in the step, and the replica reports.
result<void> simulation::end_steps() {
  for (std::size_t k = 0; k < replicas_.size(); ++k) {
    auto& r = replicas_[k];
    if (!r.is_busy || r.free_at > now_) continue;
    r.is_busy = false;
    for (auto i : r.settled) settle(int(k), i);
    r.settled.clear();
    if (auto ok = report(int(k), false); !ok) return ok;
  }
  return {};
}

/// Every request that has arrived by now goes to a replica: the router's choice, from
/// what the replicas last reported. A busy replica's step was planned already: the
/// request waits in its queue for the next plan, at the step's end.
result<void> simulation::route_arrived() {
  while (next_ < order_.size() && arrival(order_[next_]) <= now_ && !is_held(order_[next_])) {
    const std::size_t i = order_[next_++];
    const std::size_t call = client_of_[i];
    if (!is_sent_[call]) {
      is_sent_[call] = true;
      ++num_in_flight_;
    }
    // Sent now: when it arrived, or when a client slot freed.
    traces_[i].arrival_s = now_ > arrival(i) ? now_ : arrival(i);
    if (prompts_[i].cancel_after_s >= 0.0) cancels_.emplace(traces_[i].arrival_s + prompts_[i].cancel_after_s, i);
    int k = 0;
    if (router_) {
      extend_block_hashes(blocks_[i], prompts_[i].prompt_ids, router_->block_size(), {});
      auto chosen = router_->choose(blocks_[i], int(prompts_[i].prompt_ids.size()));
      if (!chosen) return std::unexpected(chosen.error());
      k = *chosen;
    }
    replica_of_[i] = k;
    auto& r = replicas_[std::size_t(k)];
    ++r.stats.num_routed;
    submit(k, i);  // to a busy replica: its queue, for the plan at its step's end
  }
  return {};
}

/// The clients' cancels due by now. One that comes in during its replica's step takes
/// effect at the step's end (the step's output for it is kept).
void simulation::cancel_due() {
  while (!cancels_.empty() && cancels_.top().first <= now_) {
    due_cancels_.push_back(cancels_.top().second);
    cancels_.pop();
  }
  std::erase_if(due_cancels_, [this](std::size_t i) {
    const int k = replica_of_[i];
    auto& r = replicas_[std::size_t(k)];
    if (r.is_busy) return false;
    *r.clock = now_;
    if (auto ev = r.loop.cancel(seq_id(i + 1))) {  // none: it finished before
      record({*ev}, nullptr);
      ++num_cancelled_;
      settle(k, i);
    }
    return true;
  });
}

/// Submits prompt i to replica k, stamped with its own arrival time.
void simulation::submit(int k, std::size_t i) {
  auto& r = replicas_[std::size_t(k)];
  const auto& p = prompts_[i];
  seq_request q;
  q.id = seq_id(i + 1);
  q.prompt = p.prompt_ids;
  q.params.temperature = 0.0f;
  q.params.max_tokens = ends_on_own(i) ? p.max_tokens : p.is_score ? 1 : output_len(i);
  q.params.ignore_eos = true;  // no model EOS: the dummy EOS ends it below its limit
  if (ends_on_own(i) && !p.ends_by_stop_string) q.params.stop_token_ids = {dummy_eos_token};
  if (p.is_score) q.score_rows.assign(std::begin(dummy_score_rows), std::end(dummy_score_rows));
  q.targets = targets_;
  q.timeout_s = timeout_s_;
  *r.clock = traces_[i].arrival_s;
  if (r.gate) {  // entered as engine::submit enters it; the loop lets it out
    if (auto ok = r.gate->try_enter(int(p.prompt_ids.size())); !ok) {
      auto& t = traces_[i];
      t.is_finished = true;
      t.finished_s = t.arrival_s;
      t.reason = finish_reason::error;
      t.error = ok.error().message;
      t.error_code = ok.error().code;
      ++num_rejected_;
      settle(k, i);
      *r.clock = now_;
      return;
    }
  }
  if (auto refused = r.loop.submit(std::move(q))) {
    record({*refused}, nullptr);
    settle(k, i);
  }
  *r.clock = now_;
}

/// Each idle replica with work starts a step; one that runs nothing while work waits,
/// several times at the same moment, has stalled.
result<void> simulation::start_steps() {
  for (std::size_t k = 0; k < replicas_.size(); ++k) {
    auto& r = replicas_[k];
    int num_idle = 0;
    while (!r.is_busy && r.loop.needs_step()) {
      auto ran = run_step(int(k));
      if (!ran) return std::unexpected(ran.error());
      if (*ran || !r.loop.sched().has_work()) {
        num_idle = 0;
      } else if (++num_idle > max_idle_steps) {
        return make_error(errc::internal, "policy '" + r.loop.sched().policy_name() +
                                              "': work is waiting but no step runs (the engine stalled)");
      }
    }
  }
  return {};
}

/// One step of replica k's loop; false when nothing ran (only blocks went back, or the
/// policy shed requests).
result<bool> simulation::run_step(int k) {
  auto& r = replicas_[std::size_t(k)];
  *r.clock = now_;
  auto out = r.loop.step([this, &r](const step_plan& plan) { return execute(r, plan); });
  if (!out) return std::unexpected(out.error());
  if (cost_error_) return std::unexpected(*cost_error_);
  if (out->failure) return std::unexpected(*out->failure);
  if (!out->has_run()) {
    std::vector<std::size_t> shed;
    record(out->events, &shed);
    for (auto i : shed) settle(k, i);
    return false;
  }
  r.is_busy = true;
  r.free_at = *r.clock;
  ++r.stats.num_steps;
  batch_size_sum_ += out->shape.num_seqs();
  kv_usage_sum_ += r.loop.sched().kv_usage();
  record(out->events, &r.settled);
  return true;
}

/// The executor: the cost model's time passes, every sampled sequence gets the dummy token
/// (the dummy EOS for its last below a higher limit), every scoring one its score rows.
/// The stops reported for the last step's tokens reach the loop now, as the step runs.
result<step_result> simulation::execute(replica& r, const step_plan& plan) {
  for (seq_id id : r.stopping) {
    if (auto ev = r.loop.finish(id, finish_reason::stop)) record({*ev}, &r.settled);  // none: ended meanwhile
  }
  r.stopping.clear();
  double seconds = cost_.step_seconds(shape_of(plan));
  if (r.stats.num_steps == 0) seconds += first_step_delay_s_;  // a cold engine's first step
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) {
    cost_error_ = error{errc::invalid_argument, "the cost model (" + cost_.describe() + ") gave a step time of " +
                                                    std::to_string(seconds) + " s"};
    return std::unexpected(*cost_error_);
  }
  r.stats.busy_s += seconds;
  *r.clock = now_ + seconds;  // apply() stamps the step's tokens at its end
  step_result out;
  out.step_id = plan.step_id;
  out.backend_seconds = seconds;
  for (const auto& s : plan.seqs) {
    const auto i = std::size_t(s.id - 1);
    if (!s.logit_rows.empty()) out.rows.push_back({s.id, std::vector<float>(s.logit_rows.size(), 0.0f)});
    if (!s.do_sample) continue;
    // A checked draft: its first drafted tokens kept, each with spec_acceptance after the
    // ones before it, then one token more (see sample_rows).
    int num_kept = 0;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    while (num_kept < s.num_draft && unit(spec_rng_) < spec_acceptance_) ++num_kept;
    for (int j = 0; j <= num_kept; ++j) {
      token_id token = j < num_kept ? s.draft_token(j) : dummy_token;
      // This token's number: the tokens it had, plus j + 1.
      const bool is_end = ends_on_own(i) && int(traces_[i].token_times_s.size()) + j + 1 == output_len(i);
      if (is_end) {
        if (prompts_[i].ends_by_stop_string) {
          r.stopping.push_back(s.id);
        } else {
          token = dummy_eos_token;
        }
      }
      out.tokens.push_back({s.id, token, 0.0f, {}});
      if (is_end) break;
    }
  }
  return out;
}

/// The request timings are core's: each event carries its sequence's times. Finished
/// prompts go to `settled`, when given (the caller settles them with the router and
/// their clients).
void simulation::record(const std::vector<seq_event>& events, std::vector<std::size_t>* settled) {
  for (const auto& e : events) {
    const auto i = std::size_t(e.id - 1);
    auto& t = traces_[i];
    if (e.times.first_scheduled) t.first_scheduled_s = *e.times.first_scheduled;
    if (e.type == seq_event::kind::token) {
      t.token_times_s.push_back(e.times.last_token.value_or(now_));
      continue;
    }
    t.is_finished = true;
    t.finished_s = e.times.finished.value_or(now_);
    t.reason = e.reason;
    t.num_output_tokens = e.num_generated_tokens;
    t.num_cached_tokens = e.num_cached_tokens;
    if (e.cause) {
      t.error = e.cause->message;
      t.error_code = e.cause->code;
    }
    if (settled) settled->push_back(i);
  }
}

/// Prompt i finished on replica k, and the router and its client have heard (a step's
/// finishes: at the step's end): its blocks are no longer pending there, and its call
/// leaves the clients' slots when it was the call's last.
void simulation::settle(int k, std::size_t i) {
  if (router_) router_->release(k, blocks_[i]);
  if (--num_left_[client_of_[i]] == 0) --num_in_flight_;
}

bench::request_record simulation::record_of(std::size_t i) const {
  const auto& t = traces_[i];
  auto r = bench::record_from_timeline(t.arrival_s, t.token_times_s, t.finished_s, t.num_output_tokens);
  if (prompts_[i].is_score && t.is_finished) {  // its one output is its score, at the end
    r.is_success = true;
    r.error.clear();
    r.ttft_s = r.e2el_s;
  }
  if (!t.is_finished) {
    r.is_success = false;
    r.error = "did not finish";
  } else if (t.reason != finish_reason::stop && t.reason != finish_reason::length) {
    r.is_success = false;
    r.error = t.error.empty() ? std::string("finished: ") + finish_name(t.reason) : t.error;
    const errc code = t.error_code.value_or(t.reason == finish_reason::cancelled ? errc::cancelled : errc::internal);
    r.error_code = to_string(code);
    r.http_status = info(code).http_status;
  }
  if (t.is_finished) r.finish_reason = finish_name(t.reason);
  r.index = int(i);
  r.start_s = t.arrival_s;
  r.prompt_tokens = int(prompts_[i].prompt_ids.size());
  r.cached_tokens = t.num_cached_tokens;
  r.tag = prompts_[i].tag;
  return r;
}

void add(scheduler_counters& sum, const scheduler_counters& c) {
  sum.num_steps += c.num_steps;
  sum.num_submitted += c.num_submitted;
  sum.num_finished += c.num_finished;
  sum.num_preemptions += c.num_preemptions;
  sum.num_rejected_decisions += c.num_rejected_decisions;
  sum.num_prefix_cache_queries += c.num_prefix_cache_queries;
  sum.num_prefix_cache_hits += c.num_prefix_cache_hits;
  sum.num_constrained_steps += c.num_constrained_steps;
  sum.num_shed += c.num_shed;
  sum.num_draft_tokens += c.num_draft_tokens;
  sum.num_accepted_tokens += c.num_accepted_tokens;
  sum.num_drafts += c.num_drafts;
}

sim_result simulation::finish(const sim_config& config) {
  sim_result out;
  for (std::size_t i = 0; i < traces_.size(); ++i) {
    out.records.push_back(record_of(i));
    out.first_scheduled_s.push_back(traces_[i].first_scheduled_s);
  }
  out.duration_s = now_;
  out.batch_size_sum = batch_size_sum_;
  out.kv_usage_sum = kv_usage_sum_;
  for (auto& r : replicas_) {
    r.stats.counters = r.loop.sched().counters();
    out.busy_s += r.stats.busy_s;
    out.num_steps += r.stats.num_steps;
    add(out.counters, r.stats.counters);
    out.num_kv_blocks += config.num_kv_blocks;
    out.num_free_blocks_at_end += r.loop.kv().num_free_blocks();
    out.num_kv_sequences_at_end += r.loop.kv().num_known_sequences();
    out.replicas.push_back(r.stats);
  }
  out.replica_of = replica_of_;
  out.num_rejected = num_rejected_;
  out.num_cancelled = num_cancelled_;
  if (router_) out.num_refused_route_choices = router_->num_refused_choices();
  out.summary = bench::summarize(out.records, out.duration_s, config.percentiles, config.objectives);
  return out;
}

}  // namespace

result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, policy pol, const sim_config& config,
                            const step_cost_model& cost) {
  std::vector<policy> one;
  one.push_back(std::move(pol));
  return simulate(prompts, std::move(one), std::nullopt, config, cost);
}

result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, std::vector<policy> policies,
                            std::optional<route_policy> route, const sim_config& config, const step_cost_model& cost) {
  if (prompts.empty()) return make_error(errc::invalid_argument, "simulate: the workload has no requests");
  if (policies.empty()) return make_error(errc::invalid_argument, "simulate: no replica (no policy instance)");
  if (policies.size() > 1 && !route)
    return make_error(errc::invalid_argument, "simulate: several replicas need a routing policy");
  for (const auto& p : prompts) {
    if (p.prompt_ids.empty() && !p.prompt_text.empty())
      return make_error(errc::invalid_argument, "simulate: prompts must be token ids, not text");
  }
  std::vector<replica> replicas;
  for (auto& pol : policies) {
    auto clock = std::make_shared<double>(0.0);
    step_loop_options options;
    options.max_queue_time_s = config.max_queue_time_s;
    if (config.admission) options.gate = std::make_shared<admission_gate>(*config.admission);
    auto loop = step_loop::try_create(config.scheduler, config.num_kv_blocks, config.block_size, std::move(pol),
                                      [clock] { return *clock; }, options);
    if (!loop) return std::unexpected(loop.error());
    replicas.emplace_back(std::move(*loop), std::move(clock));
    replicas.back().gate = options.gate;
  }
  simulation sim(prompts, cost, std::move(replicas), std::move(route), config);
  if (auto ok = sim.run(); !ok) return std::unexpected(ok.error());
  return sim.finish(config);
}

}  // namespace inflight::sim
