#include "actors/gateway/engine_events.hpp"

#include <algorithm>

#include "actors/engine_api.hpp"
#include "actors/gateway/sse.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

json seqs_json(const step_summary& s) {
  json out = json::array();
  for (const auto& q : s.seqs) {
    json seq = {{"id", q.id}, {"prefill", q.num_prefill_tokens}, {"decode", q.num_decode_tokens},
                {"draft", q.num_draft_tokens}, {"position", q.position}};
    if (!q.adapter.empty()) seq["adapter"] = q.adapter;
    out.push_back(std::move(seq));
  }
  return out;
}

json finished_json(const step_summary& s) {
  json out = json::array();
  for (const auto& f : s.finished) out.push_back({{"id", f.id}, {"reason", finish_name(f.reason)}});
  return out;
}

std::string event_text(const char* name, const std::string& id, const json& payload) {
  return sse_named_event(name, payload, id);
}

}  // namespace

std::string engine_event_text(gateway_state& state, const std::string& engine) {
  const auto& d = state.eng().settings();
  const auto snap = state.eng().snapshot();
  json payload = {
      {"type", "engine"},
      {"model", state.model().name},
      {"policy", d.scheduler.policy},
      {"backend", d.engine.backend},
      {"budget", d.engine.max_num_batched_tokens},
      {"max_num_seqs", d.engine.max_num_seqs},
      {"num_kv_blocks", snap.num_blocks},
      {"block_size", d.engine.block_size},
      {"max_context", state.model().max_context},
      {"vocab_size", state.model().vocab_size},
      {"queue_size", d.server.events_queue_size},
      {"max_seqs", d.server.events_max_seqs},
      {"steps", snap.num_steps},
      {"t", engine_now()},
  };
  if (const auto engines = state.eng().engine_addresses(); !engines.empty()) {
    payload["engine"] = engine;
    payload["engines"] = engines;
  }
  return event_text("engine", {}, payload);
}

std::string step_event_text(const step_summary& s) {
  json payload = {
      {"type", "step"},
      {"step", s.first_step_id},
      {"last_step", s.last_step_id},
      {"num_steps", s.num_steps},
      {"t", s.start_s},
      {"duration_ms", (s.end_s - s.start_s) * 1e3},
      {"busy_ms", s.busy_s * 1e3},
      {"budget", s.token_budget},
      {"prefill_tokens", s.num_prefill_tokens},
      {"decode_tokens", s.num_decode_tokens},
      {"draft_tokens", s.num_draft_tokens},
      {"accepted_tokens", s.num_accepted_tokens},
      {"max_step_tokens", s.max_step_tokens},
      {"max_step_seqs", s.max_step_seqs},
      {"fused_steps", s.num_fused_steps},
      {"seqs", seqs_json(s)},
      {"seqs_dropped", s.num_seqs_dropped},
      {"joined", s.joined},
      {"finished", finished_json(s)},
      {"preempted", s.preempted},
      {"num_joined", s.num_joined},
      {"num_finished", s.num_finished},
      {"preemptions", s.num_preemptions},
      {"kv_usage", s.kv_usage},
      {"max_kv_usage", s.max_kv_usage},
      {"waiting", s.num_waiting},
      {"running", s.num_running},
  };
  return event_text("step", std::to_string(s.last_step_id), payload);
}

api_error ui_disabled(std::string_view path) {
  return not_found("the web UI is off (server.enable_ui = false): no " + std::string(path), "ui_disabled");
}

api_result<std::shared_ptr<step_subscription>> try_subscribe_engine_events(gateway_state& state,
                                                                           const std::optional<std::string>& engine) {
  if (!state.settings().enable_ui) return std::unexpected(ui_disabled("/v1/engine/events"));
  const auto engines = state.eng().engine_addresses();
  if (engines.empty()) {
    if (engine) return std::unexpected(bad_request("engine: this server runs its engine in its own process", "engine"));
    return state.steps().try_subscribe();
  }
  if (!engine) return state.steps().try_subscribe(engines.front());
  if (std::find(engines.begin(), engines.end(), *engine) == engines.end()) {
    std::string known;
    for (const auto& e : engines) known += (known.empty() ? "" : ", ") + e;
    return std::unexpected(
        bad_request("engine: '" + *engine + "' is not an engine of this router (" + known + ")", "engine"));
  }
  return state.steps().try_subscribe(*engine);
}

}  // namespace inflight::gateway
