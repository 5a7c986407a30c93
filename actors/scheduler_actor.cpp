#include "actors/scheduler_actor.hpp"

#include <chrono>
#include <cstdio>

#include "actors/request_actor.hpp"

namespace inflight {
namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

void maybe_step(self_ptr self);

engine_snapshot make_snapshot(self_ptr self) {
  auto& st = self->state;
  engine_snapshot s = st.totals;
  const auto& sched = *st.sched;
  s.gauges.num_requests_running = sched.num_running();
  s.gauges.num_requests_waiting = sched.num_waiting();
  s.gauges.kv_cache_usage = sched.kv_usage();
  s.gauges.num_preemptions = sched.num_preemptions();
  s.gauges.num_rejected_decisions = sched.num_rejected_decisions();
  s.gauges.num_prefix_cache_queries = sched.counters().num_prefix_cache_queries;
  s.gauges.num_prefix_cache_hits = sched.counters().num_prefix_cache_hits;
  s.gauges.num_failed_steps = st.totals.num_failed_steps;
  s.gauges.num_constrained_steps = sched.counters().num_constrained_steps;
  s.gauges.num_shed = sched.counters().num_shed;
  s.num_free_blocks = sched.kv().num_free_blocks;
  s.num_blocks = sched.kv().num_blocks;
  s.is_idle = !sched.has_work() && !sched.has_pending_step() && !sched.has_pending_releases();
  return s;
}

void publish(self_ptr self) {
  auto& st = self->state;
  auto snap = make_snapshot(self);
  std::lock_guard lock(st.gauges->mutex);
  st.gauges->snapshot = std::move(snap);
}

/// Sends each event to the request actor that owns its sequence, after publishing
/// the state those events leave behind: the snapshot and, at the end of a step
/// (`step_end`), its summary, so a sink that saw a request finish also sees both.
void route(self_ptr self, const std::vector<seq_event>& events, double step_start,
           std::optional<double> step_end = std::nullopt) {
  auto& st = self->state;
  publish(self);
  st.recorder.on_events(st.gauges->steps, events);
  if (step_end) st.recorder.on_applied(st.gauges->steps, *st.sched, *step_end);
  for (const auto& ev : events) {
    auto it = st.routes.find(ev.id);
    if (it == st.routes.end()) continue;
    if (ev.type == seq_event::kind::token) {
      self->send(it->second.actor, token_atom::value,
                 token_message{ev.token, it->second.first_scheduled_s.value_or(step_start)});
    } else {
      // Finished before it ever ran (cancelled, expired, aborted): it leaves the queue bound.
      if (!it->second.first_scheduled_s) st.options.gate->leave(it->second.num_prompt_tokens);
      self->send(it->second.actor, finished_atom::value, ev);
      st.routes.erase(it);
    }
  }
}

void finish_one(self_ptr self, seq_id id, finish_reason reason, std::optional<error> cause) {
  auto ev = self->state.sched->finish(id, reason, std::move(cause));
  if (ev) route(self, {*ev}, engine_now());
  maybe_step(self);  // returns its blocks even when nothing else runs
}

/// The step failed (its kv round trip or the backend): its sequences finish with
/// `cause`; the engine serves on. /health turns 503 only after
/// engine.unhealthy_after_failed_steps failures in a row.
std::vector<seq_event> fail_step(self_ptr self, const error& cause) {
  auto& t = self->state.totals;
  ++t.num_failed_steps;
  ++t.num_consecutive_failed_steps;
  t.last_step_error = cause.message;
  return self->state.sched->fail_step(cause);
}

/// The kv round trip failed: the step's sequences finish with an error, the others go
/// on (each failure finishes at least one sequence, so this ends).
void fail(self_ptr self, const error& cause, double start) {
  route(self, fail_step(self, cause), start);
  if (self->state.sched->has_work()) maybe_step(self);
}

void on_step_done(self_ptr self, step_outcome& out, double start, int num_seqs, int num_tokens) {
  auto& st = self->state;
  std::vector<seq_event> events;
  if (out.failure) {
    events = fail_step(self, {errc::backend_error, "backend error: " + out.failure->message});
  } else if (auto applied = st.sched->apply(out.result); applied) {
    st.totals.num_consecutive_failed_steps = 0;
    events = std::move(*applied);
  } else {
    events = fail_step(self, {errc::internal, "engine error: " + applied.error().message});
  }
  const double end = engine_now();
  auto& t = st.totals;
  ++t.num_steps;
  t.backend_seconds += out.result.backend_seconds;
  t.engine_seconds += end - start;
  t.batch_size_sum += num_seqs;
  t.kv_usage_sum += st.sched->kv_usage();
  st.metrics->iteration_tokens.observe(num_tokens);
  route(self, events, start, end);
  maybe_step(self);
}

void execute(self_ptr self, step_plan plan, double start) {
  auto& st = self->state;
  st.recorder.on_planned(st.gauges->steps, plan, *st.sched, start);
  for (const auto& s : plan.seqs) {
    auto it = st.routes.find(s.id);
    if (it == st.routes.end() || it->second.first_scheduled_s) continue;
    it->second.first_scheduled_s = start;
    st.options.gate->leave(it->second.num_prompt_tokens);  // it has started: no longer waiting
  }
  const int num_seqs = int(plan.seqs.size()), num_tokens = plan.num_tokens();
  self->request(st.executor, caf::infinite, execute_atom::value, std::move(plan))
      .then([self, start, num_seqs, num_tokens](step_outcome& out) {
        on_step_done(self, out, start, num_seqs, num_tokens);
      });
}

/// Publishes the cache's change with the load it leaves (the feed drops reports that
/// change nothing).
void report_cache(self_ptr self, cache_delta changes, bool is_full = false) {
  auto& st = self->state;
  if (!st.gauges->caches.is_active()) return;
  const auto& sched = *st.sched;
  engine_report r;
  r.is_full = is_full;
  r.added = std::move(changes.added);
  r.evicted = std::move(changes.evicted);
  r.num_waiting = sched.num_waiting();
  r.num_running = sched.num_running();
  r.num_free_blocks = sched.kv().num_free_blocks;
  r.num_total_blocks = sched.kv().num_blocks;
  r.block_size = sched.kv().block_size;
  st.gauges->caches.publish(r);
}

/// A full report: every cached hash, asked of the kv allocator after the grants already
/// asked (its replies come in order, so the deltas before it are already published).
void report_full_cache(self_ptr self) {
  self->request(self->state.kv, caf::infinite, full_report_atom::value)
      .then([self](cached_blocks& blocks) { report_cache(self, {std::move(blocks.hashes), {}}, true); },
            [](caf::error&) {});
}

void on_grant(self_ptr self, kv_reply& reply, double start) {
  auto& st = self->state;
  cache_delta changes;
  if (reply) changes = std::move(reply->cache_changes);
  auto plan = reply ? st.sched->on_grant(std::move(*reply)) : std::unexpected(reply.error());
  report_cache(self, std::move(changes));
  if (!plan) return fail(self, {errc::internal, "kv allocator: " + plan.error().message}, start);
  if (!plan->seqs.empty()) return execute(self, std::move(*plan), start);
  publish(self);
  // Only blocks went back, or every sequence asked was cancelled meanwhile: look again
  // soon, and return the blocks of those cancelled now.
  if (st.sched->has_work()) self->delayed_send(self, std::chrono::milliseconds(1), step_atom::value);
  else maybe_step(self);
}

/// One step: plan -> one kv-allocator round trip -> executor -> apply -> route.
void maybe_step(self_ptr self) {
  auto& st = self->state;
  if (st.sched->has_pending_step()) return;
  if (!st.sched->has_work() && !st.sched->has_pending_releases()) return;
  const double start = engine_now();
  auto request = st.sched->schedule();
  if (!request) return fail(self, {errc::internal, request.error().message}, start);
  if (auto shed = st.sched->take_shed_events(); !shed.empty()) route(self, shed, start);
  self->request(st.kv, caf::infinite, grant_atom::value, std::move(*request))
      .then([self, start](kv_reply& reply) { on_grant(self, reply, start); },
            [self, start](caf::error& err) {
              fail(self, {errc::internal, "kv allocator: " + self->system().render(err)}, start);
            });
}

void on_submit(self_ptr self, seq_request& req, request_context& ctx) {
  auto& st = self->state;
  request_actor actor = self->spawn(request_fn, std::move(ctx), scheduler_actor(self));
  const seq_id id = req.id;
  const int num_prompt_tokens = int(req.prompt.size());
  const auto refuse = [&](finish_reason reason, error cause) {
    st.options.gate->leave(num_prompt_tokens);
    self->send(actor, finished_atom::value, seq_event{id, seq_event::kind::finished, {}, reason, std::move(cause), 0});
  };
  if (!st.is_accepting) return refuse(finish_reason::aborted, {errc::shutting_down, "the server is shutting down"});
  if (auto ok = st.sched->submit(std::move(req)); !ok) return refuse(finish_reason::error, ok.error());
  st.routes[id] = {std::move(actor), std::nullopt, num_prompt_tokens};
  if (st.options.max_queue_time_s > 0) {
    self->delayed_send(self, std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::duration<double>(st.options.max_queue_time_s)),
                       expire_atom::value, id);
  }
  publish(self);
  maybe_step(self);
}

/// A request that has not started within server.max_queue_time_s fails (it holds no
/// KV blocks yet; its admission count is released as it finishes).
void on_expire(self_ptr self, seq_id id) {
  auto& st = self->state;
  auto it = st.routes.find(id);
  if (it == st.routes.end() || it->second.first_scheduled_s) return;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", st.options.max_queue_time_s);
  finish_one(self, id, finish_reason::error,
             error{errc::queue_timeout, std::string("the request waited ") + limit +
                                            " s without starting (server.max_queue_time_s): the server is overloaded"});
}

}  // namespace

scheduler_actor::behavior_type scheduler_fn(self_ptr self, std::shared_ptr<std::optional<scheduler>> sched,
                                            executor_actor executor, kv_allocator_actor kv,
                                            std::shared_ptr<engine_metrics> metrics,
                                            std::shared_ptr<shared_gauges> gauges, scheduler_actor_options options) {
  auto& st = self->state;
  st.sched = std::move(*sched);
  st.executor = std::move(executor);
  st.kv = std::move(kv);
  st.metrics = std::move(metrics);
  st.gauges = std::move(gauges);
  st.options = std::move(options);
  if (st.metrics) {
    st.sched->set_mask_observer([metrics = st.metrics](double seconds) {
      metrics->grammar_mask_seconds.observe(seconds);
    });
  }
  return {
      [self](submit_atom, seq_request& req, request_context& ctx) { on_submit(self, req, ctx); },
      [self](cancel_atom, seq_id id) { finish_one(self, id, finish_reason::cancelled, std::nullopt); },
      [self](finish_atom, seq_id id, const seq_event& ev) { finish_one(self, id, ev.reason, ev.cause); },
      [self](expire_atom, seq_id id) { on_expire(self, id); },
      [self](step_atom) { maybe_step(self); },
      [self](drain_atom) { self->state.is_accepting = false; },
      [self](full_report_atom) { report_full_cache(self); },
      [self](abort_atom) {
        self->state.is_accepting = false;
        std::vector<seq_id> ids;
        for (const auto& [id, r] : self->state.routes) ids.push_back(id);
        for (auto id : ids)
          finish_one(self, id, finish_reason::aborted, error{errc::shutting_down, "the server is shutting down"});
      },
  };
}

}  // namespace inflight
