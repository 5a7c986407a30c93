#include "core/engine/sched/step_loop.hpp"

#include <algorithm>
#include <cstdio>

namespace inflight {
namespace {

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

}  // namespace

result<step_loop> step_loop::try_create(const scheduler_config& config, int num_blocks, int block_size,
                                        policy pol, scheduler::clock_fn clock, step_loop_options options) {
  auto kv = kv_manager::try_create(num_blocks, block_size, options.num_draft_blocks);
  if (!kv) return std::unexpected(kv.error());
  auto sched = scheduler::try_create(config, kv->snapshot(), std::move(pol), std::move(clock));
  if (!sched) return std::unexpected(sched.error());
  return step_loop(std::move(*sched), std::move(*kv), std::move(options));
}

step_loop::step_loop(scheduler sched, kv_manager kv, step_loop_options options)
    : sched_(std::move(sched)), kv_(std::move(kv)), options_(std::move(options)) {}

step_loop::step_loop(scheduler sched, step_loop_options options)
    : sched_(std::move(sched)), options_(std::move(options)) {}

// ---- requests -------------------------------------------------------------------------

std::optional<seq_event> step_loop::submit(seq_request request) {
  const seq_id id = request.id;
  const int num_prompt_tokens = int(request.prompt.size());
  const double arrival = request.arrival.value_or(sched_.now());
  std::optional<error> refusal;
  finish_reason reason = finish_reason::error;
  if (!is_accepting_) {
    refusal = error{errc::shutting_down, "the server is shutting down"};
    reason = finish_reason::aborted;
  } else if (auto ok = sched_.submit(std::move(request)); !ok) {
    refusal = ok.error();
  }
  if (!refusal) {
    if (options_.gate) not_started_[id] = num_prompt_tokens;
    return std::nullopt;
  }
  if (options_.gate) options_.gate->leave(num_prompt_tokens);
  seq_event ev;
  ev.id = id;
  ev.type = seq_event::kind::finished;
  ev.reason = reason;
  ev.cause = std::move(refusal);
  ev.times.arrival = arrival;
  ev.times.finished = sched_.now();
  return ev;
}

std::optional<seq_event> step_loop::finish(seq_id id, finish_reason reason, std::optional<error> cause) {
  auto ev = sched_.finish(id, reason, std::move(cause));
  if (!ev) return std::nullopt;
  settle(*ev);
  return std::move(*ev);
}

std::vector<seq_id> step_loop::live_ids() const {
  std::vector<seq_id> ids(sched_.running().begin(), sched_.running().end());
  ids.insert(ids.end(), sched_.waiting().begin(), sched_.waiting().end());
  return ids;
}

std::vector<seq_event> step_loop::abort_all(const error& cause) {
  drain();
  std::vector<seq_event> events;
  for (seq_id id : live_ids()) {
    if (auto ev = finish(id, finish_reason::aborted, cause)) events.push_back(std::move(*ev));
  }
  return events;
}

// ---- the phases -----------------------------------------------------------------------

std::vector<seq_event> step_loop::expire() {
  std::vector<seq_event> events;
  const double now = sched_.now();
  for (seq_id id : live_ids()) {
    const sequence* seq = sched_.find(id);
    if (!seq) continue;
    const double waited = now - seq->times.arrival;
    result<seq_event> ev = std::unexpected(error{});
    if (seq->timeout_s > 0 && waited >= seq->timeout_s) {
      ev = sched_.finish(id, finish_reason::aborted,
                         error{errc::timeout, "request deadline of " + seconds_text(seq->timeout_s) +
                                                  " s exceeded (server.request_timeout_s)"});
    } else if (options_.max_queue_time_s > 0 && !seq->times.first_scheduled && waited >= options_.max_queue_time_s) {
      ev = sched_.finish(id, finish_reason::error,
                         error{errc::queue_timeout, "the request waited " + seconds_text(options_.max_queue_time_s) +
                                                        " s without starting (server.max_queue_time_s): the server "
                                                        "is overloaded"});
    }
    if (ev) events.push_back(std::move(*ev));
  }
  return events;
}

std::optional<double> step_loop::next_deadline() const {
  std::optional<double> first;
  const auto consider = [&](double t) { first = first ? std::min(*first, t) : t; };
  for (seq_id id : live_ids()) {
    const sequence* seq = sched_.find(id);
    if (!seq) continue;
    if (seq->timeout_s > 0) consider(seq->times.arrival + seq->timeout_s);
    if (options_.max_queue_time_s > 0 && !seq->times.first_scheduled)
      consider(seq->times.arrival + options_.max_queue_time_s);
  }
  return first;
}

step_loop::opening step_loop::open() {
  opening out;
  if (sched_.has_pending_step()) return out;
  out.events = expire();
  if (needs_step()) {
    auto request = sched_.schedule();
    auto shed = sched_.take_shed_events();
    out.events.insert(out.events.end(), shed.begin(), shed.end());
    if (request) {
      last_request_ = *request;
      out.request = std::move(*request);
    } else {
      auto lost = failed({errc::internal, request.error().message});
      out.events.insert(out.events.end(), lost.begin(), lost.end());
    }
  }
  settle(out.events);
  return out;
}

step_loop::granted step_loop::on_grant(result<kv_grant> grant) {
  granted out;
  auto plan = grant ? sched_.on_grant(std::move(*grant)) : std::unexpected(grant.error());
  if (!plan) {
    out.events = failed({errc::internal, "kv allocator: " + plan.error().message});
    settle(out.events);
    return out;
  }
  out.plan = std::move(*plan);
  out.drafts = sched_.take_draft_plan();
  for (const auto& s : out.plan.seqs) leave_gate(s.id);  // it runs: no longer waiting to start
  return out;
}

void step_loop::on_drafts(step_plan& plan, result<draft_result> drafts) {
  if (!drafts) ++totals_.num_failed_drafts;
  sched_.on_drafts(plan, std::move(drafts));
}

std::vector<seq_event> step_loop::on_result(result<step_result> result) {
  std::vector<seq_event> events;
  ++totals_.num_steps;
  if (!result) {
    events = failed({errc::backend_error, "backend error: " + result.error().message});
  } else if (auto applied = sched_.apply(*result); applied) {
    totals_.num_consecutive_failed_steps = 0;
    events = std::move(*applied);
  } else {
    events = failed({errc::internal, "engine error: " + applied.error().message});
  }
  settle(events);
  return events;
}

std::vector<seq_event> step_loop::failed(const error& cause) {
  ++totals_.num_failed_steps;
  ++totals_.num_consecutive_failed_steps;
  totals_.last_step_error = cause.message;
  last_failure_ = cause;
  return sched_.fail_step(cause);
}

void step_loop::settle(const std::vector<seq_event>& events) {
  for (const auto& ev : events) settle(ev);
}

void step_loop::settle(const seq_event& event) {
  if (event.type == seq_event::kind::finished) leave_gate(event.id);
}

void step_loop::leave_gate(seq_id id) {
  auto it = not_started_.find(id);
  if (it == not_started_.end()) return;
  options_.gate->leave(it->second);
  not_started_.erase(it);
}

// ---- a whole step ---------------------------------------------------------------------

result<step_plan> step_loop::plan() {
  if (!kv_) return make_error(errc::internal, "plan() needs the loop's own KV manager");
  auto request = sched_.schedule();
  if (!request) return std::unexpected(request.error());
  last_request_ = *request;
  auto grant = kv_->try_grant(*request);
  if (!grant) return std::unexpected(grant.error());
  return sched_.on_grant(std::move(*grant));
}

result<step_outcome> step_loop::step(const executor_fn& execute, const executor_fn& draft_execute) {
  if (!kv_) return make_error(errc::internal, "step() needs the loop's own KV manager");
  if (sched_.has_pending_step())
    return make_error(errc::internal, "step() called while a planned step is not applied");
  const auto failures_before = totals_.num_failed_steps;
  step_outcome out;
  const auto done = [&]() -> result<step_outcome> {
    if (totals_.num_failed_steps != failures_before) out.failure = last_failure_;
    return std::move(out);
  };
  auto opened = open();
  out.events = std::move(opened.events);
  if (!opened.request) return done();
  auto granted = on_grant(kv_->try_grant(*opened.request));
  out.events.insert(out.events.end(), granted.events.begin(), granted.events.end());
  if (granted.plan.seqs.empty()) return done();
  if (granted.drafts) {
    on_drafts(granted.plan, draft_execute ? run_draft_plan(*granted.drafts, draft_execute)
                                          : make_error(errc::internal, "no draft model runs this loop's drafts"));
  }
  out.step_id = granted.plan.step_id;
  out.shape = shape_of(granted.plan);
  auto events = on_result(execute(granted.plan));
  out.events.insert(out.events.end(), events.begin(), events.end());
  return done();
}

}  // namespace inflight
