#pragma once
/// What crosses a process boundary between a gateway and an engine: the request, its
/// token and finish events, and the engine's health, as CAF 0.17 serializes them
/// (inspect() overloads, and the type names announce_wire_types() registers with an
/// actor_system_config). Everything here is plain data: no callbacks, no pointers.
///
/// A compiled grammar does not cross: a request carries the grammar_spec it was compiled
/// from (the gateway compiles it to refuse bad schemas with a 400; the engine compiles it
/// again through its own cache). CAF 0.17 cannot inspect std::optional, so optional
/// fields cross as (is-set, value) pairs through `optional_field`.

#include <caf/all.hpp>

#include <optional>
#include <string>
#include <type_traits>

#include "actors/engine_api.hpp"
#include "core/engine/metrics/step_summary.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "core/route/engine_report.hpp"

namespace inflight {

/// A request for an engine in another process.
struct wire_request {
  generate_request request;              ///< request.params.grammar is not sent
  std::optional<grammar_spec> grammar;   ///< what request.params.grammar was compiled from
};

/// An engine's answer to a wire_request: the id it runs under, or why it was refused.
struct wire_submit_reply {
  request_id id = 0;
  std::optional<error> failure;
};

/// Messages between a remote_engine and an engine_host (actors/cluster/remote_engine.hpp):
///   gateway -> engine:  (remote_submit_atom, wire_request, tag) -> wire_submit_reply
///                       (cancel_atom, request_id), (health_atom) -> engine_health
///   engine -> gateway:  (token_atom, tag, token_event), (finished_atom, tag, finish_event)
/// `tag` is the gateway's own number for the request, so that events can arrive before
/// the reply that names the engine's id.
///
/// A router also subscribes to the engine's cache and load reports
/// (core/route/engine_report.hpp), and asks for its metrics:
///   router -> engine:   (subscribe_atom): a full report follows, then the deltas
///                       (metrics_atom) -> std::string, Prometheus' text format
///   engine -> router:   (engine_report_atom, engine_report), in the order they were made
///                       (draining_atom) once the engine stops taking requests (SIGTERM:
///                       it finishes those it has, then exits); also right after a
///                       subscription to an engine that drains already
/// and, while a page watches the router's live step feed, to the engine's steps:
///   router -> engine:   (step_subscribe_atom, bool): on or off
///   engine -> router:   (step_summary_atom, step_summary), one per step, in order
using remote_submit_atom = caf::atom_constant<caf::atom("rsubmit")>;
using health_atom = caf::atom_constant<caf::atom("health")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using engine_report_atom = caf::atom_constant<caf::atom("engreport")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using step_subscribe_atom = caf::atom_constant<caf::atom("stepsub")>;
using step_summary_atom = caf::atom_constant<caf::atom("stepsum")>;
using draining_atom = caf::atom_constant<caf::atom("draining")>;
/// An engine process that serves several models ([[models]]) publishes one host actor
/// per model behind one port; the published one answers for all:
///   router -> engine:   (model_host_atom, name) -> caf::actor: the host of the model
///                       that name (or an alias) chooses; an error when it serves none
/// and the router then speaks to that host as above. A single model's host answers
/// with itself for its own name.
using model_host_atom = caf::atom_constant<caf::atom("modelhost")>;

/// Registers every type below with `cfg` (call before the actor system starts, on both sides).
void announce_wire_types(caf::actor_system_config& cfg);

/// Lets an inspector read or write a std::optional<T> as (is-set, value).
template <class T>
struct optional_field {
  std::optional<T>& value;
};

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_field<T>& x) {
  bool is_set = x.value.has_value();
  T v = is_set ? *x.value : T{};
  if constexpr (std::is_void_v<typename Inspector::result_type>) {  // to_string
    f(is_set, v);
  } else {
    auto result = f(is_set, v);
    if constexpr (Inspector::writes_state) x.value = is_set ? std::optional<T>(std::move(v)) : std::nullopt;
    return result;
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error& x) {
  return f(caf::meta::type_name("inflight_error"), x.code, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logit_bias_entry& x) {
  return f(caf::meta::type_name("logit_bias_entry"), x.token, x.bias);
}

/// All of sampling_params but the compiled grammar (see wire_request::grammar).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  return f(caf::meta::type_name("sampling_params"), x.temperature, x.top_k, x.top_p, x.min_p, x.repetition_penalty,
           x.presence_penalty, x.frequency_penalty, x.max_tokens, x.ignore_eos, x.stop_token_ids, x.logprobs,
           x.logit_bias);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, slo_targets& x) {
  return f(caf::meta::type_name("slo_targets"), x.ttft_ms, x.tpot_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, speculation_choice& x) {
  return f(caf::meta::type_name("speculation_choice"), optional_field<std::string>{x.method},
           optional_field<int>{x.num_tokens});
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
  return f(caf::meta::type_name("generate_request"), x.prompt, x.params, optional_field<std::uint64_t>{x.seed}, x.stop,
           x.priority, x.cache_salt, x.timeout_s, x.score_rows, optional_field<pooling_kind>{x.pooling}, x.targets,
           x.speculation, x.adapter);
}


template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, grammar_spec& x) {
  return f(caf::meta::type_name("grammar_spec"), x.kind, x.text);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_request& x) {
  return f(caf::meta::type_name("wire_request"), x.request, optional_field<grammar_spec>{x.grammar});
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_submit_reply& x) {
  return f(caf::meta::type_name("wire_submit_reply"), x.id, optional_field<error>{x.failure});
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, top_logprob& x) {
  return f(caf::meta::type_name("top_logprob"), x.token, x.logprob);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampled_token& x) {
  return f(caf::meta::type_name("sampled_token"), x.id, x.token, x.logprob, x.top_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_event& x) {
  return f(caf::meta::type_name("token_event"), x.text, x.token_ids, x.logprobs, x.index);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_timings& x) {
  return f(caf::meta::type_name("request_timings"), x.queue_ms, x.ttft_ms, x.tpot_ms, x.e2e_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finish_event& x) {
  return f(caf::meta::type_name("finish_event"), x.reason, optional_field<error>{x.cause}, x.text, x.prompt_tokens,
           x.completion_tokens, x.cached_tokens, x.stop_string, optional_field<token_id>{x.stop_token}, x.draft_tokens,
           x.accepted_tokens, x.timings, x.row_logits, x.embedding);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_health& x) {
  return f(caf::meta::type_name("engine_health"), x.is_healthy, x.is_stopped, x.num_consecutive_failed_steps,
           x.num_failed_steps, x.last_step_error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, block_hash& x) {
  return f(caf::meta::type_name("block_hash"), x.low, x.high);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_report& x) {
  return f(caf::meta::type_name("engine_report"), x.is_full, x.added, x.evicted, x.num_waiting, x.num_running,
           x.num_free_blocks, x.num_total_blocks, x.block_size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_seq& x) {
  return f(caf::meta::type_name("step_seq"), x.id, x.num_prefill_tokens, x.num_decode_tokens, x.position,
           x.num_draft_tokens, x.adapter);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_finish& x) {
  return f(caf::meta::type_name("step_finish"), x.id, x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_summary& x) {
  return f(caf::meta::type_name("step_summary"), x.first_step_id, x.last_step_id, x.num_steps, x.start_s, x.end_s,
           x.busy_s, x.token_budget, x.num_prefill_tokens, x.num_decode_tokens, x.num_draft_tokens,
           x.num_accepted_tokens, x.max_step_tokens, x.max_step_seqs,
           x.num_fused_steps, x.seqs, x.num_seqs_dropped, x.joined, x.finished, x.preempted, x.num_joined,
           x.num_finished, x.num_preemptions, x.kv_usage, x.max_kv_usage, x.num_waiting, x.num_running, x.engine);
}

}  // namespace inflight
