#include "actors/engine/scheduler_actor.hpp"

#include <algorithm>
#include <chrono>

#include "actors/engine/request_actor.hpp"
#include "core/model/lora.hpp"

namespace inflight {
namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

void maybe_step(self_ptr self);

step_loop& loop_of(self_ptr self) { return *self->state.loop; }

engine_snapshot make_snapshot(self_ptr self) {
  auto& st = self->state;
  engine_snapshot s = st.totals;
  const auto& loop = *st.loop;
  const auto& sched = loop.sched();
  const auto& steps = loop.totals();
  s.num_steps = steps.num_steps;
  s.num_failed_steps = steps.num_failed_steps;
  s.num_consecutive_failed_steps = int(steps.num_consecutive_failed_steps);
  s.last_step_error = steps.last_step_error;
  s.gauges.num_requests_running = sched.num_running();
  s.gauges.num_requests_waiting = sched.num_waiting();
  s.gauges.kv_cache_usage = sched.kv_usage();
  if (const kv_snapshot& kv = sched.kv(); kv.num_draft_blocks > 0)
    s.gauges.draft_kv_cache_usage = 1.0 - double(kv.num_free_draft_blocks) / kv.num_draft_blocks;
  s.gauges.num_preemptions = sched.num_preemptions();
  s.gauges.num_rejected_decisions = sched.num_rejected_decisions();
  s.gauges.num_prefix_cache_queries = sched.counters().num_prefix_cache_queries;
  s.gauges.num_prefix_cache_hits = sched.counters().num_prefix_cache_hits;
  s.gauges.num_failed_steps = steps.num_failed_steps;
  s.gauges.num_constrained_steps = sched.counters().num_constrained_steps;
  s.gauges.num_shed = sched.counters().num_shed;
  s.gauges.num_drafts = sched.counters().num_drafts;
  s.gauges.num_draft_tokens = sched.counters().num_draft_tokens;
  s.gauges.num_accepted_tokens = sched.counters().num_accepted_tokens;
  // LoRA adapters of running and waiting requests, each once, by name.
  const auto adapters_of = [&](const auto& ids) {
    std::vector<std::string> out;
    for (const auto id : ids)
      if (const sequence* seq = sched.find(id); seq != nullptr && seq->adapter) out.push_back(seq->adapter->name);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  s.gauges.running_adapters = adapters_of(sched.running());
  s.gauges.waiting_adapters = adapters_of(sched.waiting());
  s.num_free_blocks = sched.kv().num_free_blocks;
  s.num_blocks = sched.kv().num_blocks;
  s.is_idle = !sched.has_work() && !loop.is_stepping() && !sched.has_pending_releases();
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
void route(self_ptr self, const std::vector<seq_event>& events, std::optional<double> step_end = std::nullopt) {
  auto& st = self->state;
  publish(self);
  st.recorder.on_events(st.gauges->steps, events);
  if (step_end) st.recorder.on_applied(st.gauges->steps, loop_of(self).sched(), *step_end);
  for (const auto& ev : events) {
    auto it = st.routes.find(ev.id);
    if (it == st.routes.end()) continue;
    if (ev.type == seq_event::kind::token) {
      self->send(it->second, token_atom::value, token_message{ev.token, ev.times, ev.is_stop_token});
    } else {
      self->send(it->second, finished_atom::value, ev);
      st.routes.erase(it);
    }
  }
}

/// Opens a step when `at` (the scheduler's clock) comes, even if nothing else happens:
/// a request's queue time or deadline ends then (the loop expires it as it opens).
void wake_at(self_ptr self, double at) {
  const double delay = std::max(0.0, at - loop_of(self).sched().now());
  self->delayed_send(self, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(delay)) +
                               std::chrono::microseconds(1),
                     step_atom::value);
}

/// Publishes the finishes no step will carry when no step is open (step_recorder::on_idle).
void publish_idle(self_ptr self) {
  if (loop_of(self).is_stepping()) return;
  self->state.recorder.on_idle(self->state.gauges->steps, loop_of(self).sched(), engine_now());
}

void finish_one(self_ptr self, seq_id id, finish_reason reason, std::optional<error> cause) {
  if (auto ev = loop_of(self).finish(id, reason, std::move(cause))) route(self, {*ev});
  maybe_step(self);  // returns its blocks even when nothing else runs
  publish_idle(self);
}

void on_step_done(self_ptr self, step_reply& reply, double start, int num_seqs, int num_tokens) {
  auto& st = self->state;
  const double backend_seconds = reply ? reply->backend_seconds : 0.0;
  auto events = loop_of(self).on_result(std::move(reply));
  const double end = engine_now();
  auto& t = st.totals;
  t.backend_seconds += backend_seconds;
  t.engine_seconds += end - start;
  t.batch_size_sum += num_seqs;
  t.kv_usage_sum += loop_of(self).sched().kv_usage();
  st.metrics->iteration_tokens.observe(num_tokens);
  route(self, events, end);
  maybe_step(self);
}

void execute(self_ptr self, step_plan plan, double start) {
  auto& st = self->state;
  st.recorder.on_planned(st.gauges->steps, plan, loop_of(self).sched(), start);
  const int num_seqs = int(plan.seqs.size()), num_tokens = plan.num_tokens();
  self->request(st.executor, caf::infinite, execute_atom::value, std::move(plan))
      .then([self, start, num_seqs, num_tokens](step_reply& reply) {
              on_step_done(self, reply, start, num_seqs, num_tokens);
            },
            [self, start, num_seqs, num_tokens](caf::error& err) {
              step_reply lost = std::unexpected(error{errc::backend_error, self->system().render(err)});
              on_step_done(self, lost, start, num_seqs, num_tokens);
            });
}

/// The draft model drafts first (on the executor), then the step checks its tokens.
void draft(self_ptr self, step_loop::granted granted, double start) {
  auto plan = std::make_shared<step_plan>(std::move(granted.plan));
  self->request(self->state.executor, caf::infinite, draft_atom::value, std::move(*granted.drafts))
      .then([self, plan, start](draft_reply& reply) {
              loop_of(self).on_drafts(*plan, std::move(reply));
              execute(self, std::move(*plan), start);
            },
            [self, plan, start](caf::error& err) {
              loop_of(self).on_drafts(*plan, std::unexpected(error{errc::backend_error, self->system().render(err)}));
              execute(self, std::move(*plan), start);
            });
}

/// Publishes the cache's change with the load it leaves (the feed drops reports that
/// change nothing).
void report_cache(self_ptr self, cache_delta changes, bool is_full = false) {
  auto& st = self->state;
  if (!st.gauges->caches.is_active()) return;
  const auto& sched = loop_of(self).sched();
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
  cache_delta changes;
  if (reply) changes = std::move(reply->cache_changes);
  auto granted = loop_of(self).on_grant(std::move(reply));
  report_cache(self, std::move(changes));
  if (!granted.plan.seqs.empty() && granted.drafts) return draft(self, std::move(granted), start);
  if (!granted.plan.seqs.empty()) return execute(self, std::move(granted.plan), start);
  if (!granted.events.empty()) {  // the grant failed: its sequences finished; the others go on
    route(self, granted.events);
    return maybe_step(self);
  }
  publish(self);
  // Only blocks went back, or every sequence asked was cancelled meanwhile: look again
  // soon, and return the blocks of those cancelled now.
  if (loop_of(self).sched().has_work()) self->delayed_send(self, std::chrono::milliseconds(1), step_atom::value);
  else maybe_step(self);
  publish_idle(self);
}

/// One step: open -> one kv-allocator round trip -> executor -> apply -> route.
void maybe_step(self_ptr self) {
  auto& loop = loop_of(self);
  if (loop.is_stepping() || !loop.needs_step()) return;
  const double start = engine_now();
  auto opening = loop.open();
  if (!opening.events.empty()) route(self, opening.events);
  if (!opening.request) {
    publish(self);
    publish_idle(self);
    // The policy's call failed (its sequences finished): try again soon.
    if (loop.needs_step()) self->delayed_send(self, std::chrono::milliseconds(1), step_atom::value);
    return;
  }
  self->request(self->state.kv, caf::infinite, grant_atom::value, std::move(*opening.request))
      .then([self, start](kv_reply& reply) { on_grant(self, reply, start); },
            [self, start](caf::error& err) {
              kv_reply lost = std::unexpected(error{errc::internal, self->system().render(err)});
              on_grant(self, lost, start);
            });
}

/// Queues one request with its request actor; false when the loop refused it (its
/// actor has the refusal).
bool accept(self_ptr self, seq_request& req, request_context& ctx) {
  auto& st = self->state;
  request_actor actor = self->spawn(request_fn, std::move(ctx), scheduler_actor(self));
  const seq_id id = req.id;
  const double timeout_s = req.timeout_s;
  if (auto refused = loop_of(self).submit(std::move(req))) {
    self->send(actor, finished_atom::value, *refused);
    return false;
  }
  st.routes[id] = std::move(actor);
  const double arrival = loop_of(self).sched().find(id)->times.arrival;
  if (const double queue_s = self->state.loop->options().max_queue_time_s; queue_s > 0) wake_at(self, arrival + queue_s);
  if (timeout_s > 0) wake_at(self, arrival + timeout_s);
  return true;
}

void on_submit(self_ptr self, seq_request& req, request_context& ctx) {
  const bool queued = accept(self, req, ctx);
  publish(self);
  if (queued) maybe_step(self);
}

/// Every request first, then the step: they start together.
void on_submit_all(self_ptr self, std::vector<queued_request>& all) {
  bool any = false;
  for (auto& q : all) any = accept(self, q.seq, q.ctx) || any;
  publish(self);
  if (any) maybe_step(self);
}

}  // namespace

scheduler_actor::behavior_type scheduler_fn(self_ptr self, std::shared_ptr<std::optional<step_loop>> loop,
                                            executor_actor executor, kv_allocator_actor kv,
                                            std::shared_ptr<engine_metrics> metrics,
                                            std::shared_ptr<shared_gauges> gauges) {
  auto& st = self->state;
  st.loop = std::move(*loop);
  st.executor = std::move(executor);
  st.kv = std::move(kv);
  st.metrics = std::move(metrics);
  st.gauges = std::move(gauges);
  if (st.metrics) {
    st.loop->sched().set_mask_observer([metrics = st.metrics](double seconds) {
      metrics->grammar_mask_seconds.observe(seconds);
    });
    st.loop->sched().set_draft_observer([metrics = st.metrics](int, int kept) {
      metrics->spec_decode_acceptance_length.observe(double(kept + 1));
    });
  }
  return {
      [self](submit_atom, seq_request& req, request_context& ctx) { on_submit(self, req, ctx); },
      [self](submit_all_atom, std::vector<queued_request>& all) { on_submit_all(self, all); },
      [self](cancel_atom, seq_id id) { finish_one(self, id, finish_reason::cancelled, std::nullopt); },
      [self](finish_atom, seq_id id, const seq_event& ev) { finish_one(self, id, ev.reason, ev.cause); },
      [self](step_atom) { maybe_step(self); },
      [self](drain_atom) { loop_of(self).drain(); },
      [self](full_report_atom) { report_full_cache(self); },
      [self](abort_atom) {
        route(self, loop_of(self).abort_all(error{errc::shutting_down, "the server is shutting down"}));
        maybe_step(self);
      },
  };
}

}  // namespace inflight
