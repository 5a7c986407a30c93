#include "actors/engine/request_actor.hpp"

#include <algorithm>
#include <chrono>

#include "core/engine/sampling/sampler.hpp"

namespace inflight {

request_timings make_timings(double arrival, std::optional<double> first_scheduled, std::optional<double> first_token,
                             double finished, int num_tokens) {
  request_timings t;
  t.e2e_ms = (finished - arrival) * 1e3;
  t.queue_ms = ((first_scheduled ? *first_scheduled : finished) - arrival) * 1e3;
  t.ttft_ms = ((first_token ? *first_token : finished) - arrival) * 1e3;
  t.tpot_ms = num_tokens > 1 ? (t.e2e_ms - t.ttft_ms) / (num_tokens - 1) : 0.0;
  return t;
}

namespace {

using self_ptr = request_actor::stateful_pointer<request_state>;

void on_token(self_ptr self, const token_message& msg) {
  auto& st = self->state;
  const auto& times = msg.times;
  const double at = times.last_token.value_or(engine_now());
  if (!st.last_token_s) {
    st.ctx.metrics->time_to_first_token.observe(std::max(0.0, at - times.arrival));
    st.ctx.metrics->request_queue_time.observe(std::max(0.0, times.first_scheduled.value_or(at) - times.arrival));
  } else {
    st.ctx.metrics->inter_token_latency.observe(std::max(0.0, at - *st.last_token_s));
  }
  st.last_token_s = at;
  ++st.ctx.metrics->generation_tokens_total;
  const int index = st.num_tokens++;
  if (st.is_stopping) return;
  // A stop token ends the text: its own text is never sent (the finish event follows).
  if (msg.is_stop_token) {
    if (std::ranges::find(st.ctx.stop_token_ids, msg.token.token) != st.ctx.stop_token_ids.end())
      st.stop_token = msg.token.token;  // not an end-of-sequence token: the client named it
    return;
  }
  auto delta = st.stream->push(msg.token.token);
  token_event ev;
  ev.text = std::move(delta.text);
  ev.token_ids = {msg.token.token};
  if (st.ctx.has_logprobs || !msg.token.top_logprobs.empty()) ev.logprobs = {msg.token};
  ev.index = index;
  st.ctx.sink->on_token(ev);
  if (delta.is_stopped) {
    st.is_stopping = true;
    st.stop_string = std::move(delta.stop);
    seq_event stop;
    stop.id = st.ctx.id;
    stop.type = seq_event::kind::finished;
    stop.reason = finish_reason::stop;
    self->send(st.scheduler, finish_atom::value, st.ctx.id, stop);
  }
}

void on_finished(self_ptr self, const seq_event& ev) {
  auto& st = self->state;
  const auto& times = ev.times;
  const double finished = times.finished.value_or(engine_now());
  finish_event out;
  out.reason = ev.reason;
  out.cause = ev.cause;
  if (st.is_stopping) {
    // A stop string ended the text; whatever ended the sequence after it (max_tokens in
    // the same step, or a finish the engine had not yet seen our stop for) is not the
    // reason the client sees.
    out.reason = finish_reason::stop;
    out.cause.reset();
    out.stop_string = st.stop_string;
  } else {
    out.text = st.stream->finish();
    if (ev.reason == finish_reason::stop) out.stop_token = st.stop_token;
  }
  out.prompt_tokens = st.ctx.num_prompt_tokens;
  out.completion_tokens = st.num_tokens;
  out.cached_tokens = ev.num_cached_tokens;
  out.draft_tokens = ev.num_draft_tokens;
  out.accepted_tokens = ev.num_accepted_tokens;
  out.timings = make_timings(times.arrival, times.first_scheduled, times.first_token, finished, st.num_tokens);
  out.row_logits = ev.row_logits;
  out.embedding = ev.embedding;
  auto& m = *st.ctx.metrics;
  m.e2e_request_latency.observe(std::max(0.0, finished - times.arrival));
  m.prompt_tokens_total += std::uint64_t(out.prompt_tokens);
  m.count_finished(metrics_label(out.reason));
  st.ctx.sink->on_finish(out);
  --*st.ctx.num_live;
  self->quit();
}

}  // namespace

request_actor::behavior_type request_fn(self_ptr self, request_context ctx, scheduler_actor scheduler) {
  auto& st = self->state;
  st.stream.emplace(*ctx.tok, ctx.stop, ctx.last_prompt_token);
  st.scheduler = scheduler;
  st.ctx = std::move(ctx);
  return {
      [self](token_atom, const token_message& msg) { on_token(self, msg); },
      [self](finished_atom, const seq_event& ev) { on_finished(self, ev); },
      [self](cancel_atom) { self->send(self->state.scheduler, cancel_atom::value, self->state.ctx.id); },
  };
}

}  // namespace inflight
