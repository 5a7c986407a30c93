#include "core/sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "core/sched/step_loop.hpp"

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
  int num_output_tokens = 0;
  int num_cached_tokens = 0;
};

class simulation {
 public:
  simulation(const std::vector<bench::bench_prompt>& prompts, const step_cost_model& cost, step_loop loop,
             std::shared_ptr<double> clock, const sim_config& config)
      : prompts_(prompts), cost_(cost), loop_(std::move(loop)), clock_(std::move(clock)), targets_(config.targets),
        timeout_s_(config.request_timeout_s), traces_(prompts.size()) {
    order_.resize(prompts.size());
    std::iota(order_.begin(), order_.end(), std::size_t(0));
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return arrival(a) < arrival(b); });
    for (std::size_t i = 0; i < prompts.size(); ++i) traces_[i].arrival_s = arrival(i);
  }

  result<void> run();
  sim_result finish(const sim_config& config);

 private:
  double arrival(std::size_t i) const { return std::max(0.0, prompts_[i].arrival_s); }
  void submit_arrived();
  result<bool> run_step();
  result<step_result> execute(const step_plan& plan);
  void record(const std::vector<seq_event>& events);
  bench::request_record record_of(std::size_t i) const;

  const std::vector<bench::bench_prompt>& prompts_;
  const step_cost_model& cost_;
  step_loop loop_;
  std::shared_ptr<double> clock_;  // what the scheduler reads
  slo_targets targets_;            // of every request
  double timeout_s_ = 0.0;         // of every request
  std::vector<request_trace> traces_;
  std::vector<std::size_t> order_;  // prompt indices by arrival
  std::size_t next_ = 0;            // into order_
  double now_ = 0.0;
  std::optional<error> cost_error_;
  double busy_s_ = 0.0;
  std::uint64_t num_steps_ = 0;
  double batch_size_sum_ = 0.0, kv_usage_sum_ = 0.0;
};

result<void> simulation::run() {
  int num_idle = 0;
  for (;;) {
    submit_arrived();
    if (!loop_.needs_step()) {
      if (next_ == order_.size()) return {};
      now_ = arrival(order_[next_]);
      continue;
    }
    auto ran = run_step();
    if (!ran) return std::unexpected(ran.error());
    if (*ran || !loop_.sched().has_work()) {
      num_idle = 0;
    } else if (++num_idle > max_idle_steps) {
      return make_error(errc::internal, "policy '" + loop_.sched().policy_name() +
                                            "': work is waiting but no step runs (the engine stalled)");
    }
  }
}

/// Submits every request that has arrived by now, stamped with its own arrival time.
void simulation::submit_arrived() {
  while (next_ < order_.size() && arrival(order_[next_]) <= now_) {
    const std::size_t i = order_[next_++];
    const auto& p = prompts_[i];
    seq_request r;
    r.id = seq_id(i + 1);
    r.prompt = p.prompt_ids;
    r.params.temperature = 0.0f;
    r.params.max_tokens = p.output_len > 0 ? p.output_len : 16;
    r.params.ignore_eos = true;
    r.targets = targets_;
    r.timeout_s = timeout_s_;
    *clock_ = arrival(i);
    if (auto refused = loop_.submit(std::move(r))) record({*refused});
  }
  *clock_ = now_;
}

/// One step of the loop; false when nothing ran (only blocks went back).
result<bool> simulation::run_step() {
  *clock_ = now_;
  auto out = loop_.step([this](const step_plan& plan) { return execute(plan); });
  if (!out) return std::unexpected(out.error());
  if (cost_error_) return std::unexpected(*cost_error_);
  if (out->failure) return std::unexpected(*out->failure);
  if (!out->has_run()) {
    record(out->events);  // requests the policy shed
    return false;
  }
  now_ = *clock_;
  ++num_steps_;
  batch_size_sum_ += out->shape.num_seqs();
  kv_usage_sum_ += loop_.sched().kv_usage();
  record(out->events);
  return true;
}

/// The executor: the cost model's time passes, every sampled sequence gets the dummy token.
result<step_result> simulation::execute(const step_plan& plan) {
  const double seconds = cost_.step_seconds(shape_of(plan));
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) {
    cost_error_ = error{errc::invalid_argument, "the cost model (" + cost_.describe() + ") gave a step time of " +
                                                    std::to_string(seconds) + " s"};
    return std::unexpected(*cost_error_);
  }
  busy_s_ += seconds;
  *clock_ = now_ + seconds;  // apply() stamps the step's tokens at its end
  step_result r;
  r.step_id = plan.step_id;
  r.backend_seconds = seconds;
  for (const auto& s : plan.seqs) {
    if (s.do_sample) r.tokens.push_back({s.id, dummy_token, 0.0f, {}});
  }
  return r;
}

/// The request timings are core's: each event carries its sequence's times.
void simulation::record(const std::vector<seq_event>& events) {
  for (const auto& e : events) {
    auto& t = traces_[std::size_t(e.id - 1)];
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
    if (e.cause) t.error = e.cause->message;
  }
}

bench::request_record simulation::record_of(std::size_t i) const {
  const auto& t = traces_[i];
  auto r = bench::record_from_timeline(t.arrival_s, t.token_times_s, t.finished_s, t.num_output_tokens);
  if (!t.is_finished) {
    r.is_success = false;
    r.error = "did not finish";
  } else if (t.reason != finish_reason::stop && t.reason != finish_reason::length) {
    r.is_success = false;
    r.error = t.error.empty() ? std::string("finished: ") + to_string(t.reason) : t.error;
  }
  r.index = int(i);
  r.start_s = t.arrival_s;
  r.prompt_tokens = int(prompts_[i].prompt_ids.size());
  r.cached_tokens = t.num_cached_tokens;
  r.tag = prompts_[i].tag;
  return r;
}

sim_result simulation::finish(const sim_config& config) {
  sim_result out;
  for (std::size_t i = 0; i < traces_.size(); ++i) {
    out.records.push_back(record_of(i));
    out.first_scheduled_s.push_back(traces_[i].first_scheduled_s);
  }
  out.duration_s = now_;
  out.busy_s = busy_s_;
  out.num_steps = num_steps_;
  out.batch_size_sum = batch_size_sum_;
  out.kv_usage_sum = kv_usage_sum_;
  out.counters = loop_.sched().counters();
  out.num_kv_blocks = config.num_kv_blocks;
  out.num_free_blocks_at_end = loop_.kv().num_free_blocks();
  out.num_kv_sequences_at_end = loop_.kv().num_known_sequences();
  out.summary = bench::summarize(out.records, out.duration_s, config.percentiles, config.objectives);
  return out;
}

}  // namespace

result<sim_result> simulate(const std::vector<bench::bench_prompt>& prompts, policy pol, const sim_config& config,
                            const step_cost_model& cost) {
  if (prompts.empty()) return make_error(errc::invalid_argument, "simulate: the workload has no requests");
  for (const auto& p : prompts) {
    if (p.prompt_ids.empty() && !p.prompt_text.empty())
      return make_error(errc::invalid_argument, "simulate: prompts must be token ids, not text");
  }
  auto clock = std::make_shared<double>(0.0);
  auto loop = step_loop::try_create(config.scheduler, config.num_kv_blocks, config.block_size, std::move(pol),
                                    [clock] { return *clock; }, {.max_queue_time_s = config.max_queue_time_s});
  if (!loop) return std::unexpected(loop.error());
  simulation sim(prompts, cost, std::move(*loop), clock, config);
  if (auto ok = sim.run(); !ok) return std::unexpected(ok.error());
  return sim.finish(config);
}

}  // namespace inflight::sim
