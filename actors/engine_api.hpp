#pragma once
/// What a gateway needs of an engine: the request it submits, the events it hears back,
/// and the engine's face. The in-process engine (actors/engine/engine.hpp) provides it,
/// and so does a router in front of engines in other processes (actors/cluster/): the
/// gateway's HTTP, SSE, WebSocket and metrics code is the same for both.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/config/deployment.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/engine/sched/sequence.hpp"
#include "core/engine/step/step_plan.hpp"
#include "core/model/lora_registry.hpp"
#include "core/model/model_loader.hpp"

namespace inflight {

using request_id = seq_id;
using lora_adapter_info = lora_registry::entry_info;
class request_sink;
class step_sink;  // actors/step_feed.hpp

struct generate_request {
  std::vector<token_id> prompt;        ///< already tokenized (BOS included when the model wants it)
  sampling_params params;
  std::optional<std::uint64_t> seed;   ///< reproducible sampling; none = a seed of its own per request
  std::vector<std::string> stop;       ///< stop strings (not included in the output)
  int priority = 0;                    ///< larger = more important (priority policy)
  /// Prefix-cache salt: requests with different salts never share cached K/V.
  std::string cache_salt;
  double timeout_s = 0.0;              ///< deadline from submission (0 = none)
  /// Latency targets for an SLO-aware policy (0 = the deployment's [scheduler] default).
  slo_targets targets{};
  /// Prefill-only scoring when not empty: nothing is generated; the request finishes
  /// once its prompt is computed, with the logits of these vocabulary rows at the last
  /// prompt position (finish_event::row_logits). `params` are not used.
  std::vector<token_id> score_rows{};
  /// Prefill-only embedding when set: nothing is generated; the request finishes once
  /// its prompt is computed, with its final hidden states pooled this way
  /// (finish_event::embedding). `params` are not used.
  std::optional<pooling_kind> pooling{};
  /// Speculative decoding: the drafter and draft length this request wants (the
  /// `speculative` request field); unset = the deployment's [speculative].
  speculation_choice speculation{};
  /// The LoRA adapter it runs with, by name (lora.adapters, /v1/load_lora_adapter); "":
  /// the base model.
  std::string adapter;

  bool is_prefill_only() const { return !score_rows.empty() || pooling.has_value(); }
};

/// A request and the sink of its events (engine_api::submit_all).
struct submission {
  generate_request request;
  std::shared_ptr<request_sink> sink;
};

/// Times of one request, from the engine's clock.
struct request_timings {
  double queue_ms = 0.0;   ///< submission -> first scheduled
  double ttft_ms = 0.0;    ///< submission -> first token
  double tpot_ms = 0.0;    ///< (e2e - ttft) / (output tokens - 1)
  double e2e_ms = 0.0;     ///< submission -> finish
};

struct token_event {
  std::string text;                    ///< new text (may be empty while a character or stop string is pending)
  std::vector<token_id> token_ids;     ///< the token(s) of this event
  std::vector<sampled_token> logprobs; ///< one per token when logprobs were asked for
  int index = 0;                       ///< number of tokens before this event
};

struct finish_event {
  finish_reason reason = finish_reason::stop;
  std::optional<error> cause;          ///< why, for error / aborted (a value: the edge maps it)
  std::string text;                    ///< text released at the end (held bytes)
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;               ///< prompt tokens taken from the prefix cache
  /// reason stop: what ended the text (vLLM's stop_reason): the stop string that matched,
  /// or the stop_token_ids entry; neither for an end-of-sequence token.
  std::string stop_string;
  std::optional<token_id> stop_token;
  /// Speculative decoding: drafted tokens checked for it, and those kept.
  int draft_tokens = 0;
  int accepted_tokens = 0;
  request_timings timings;
  std::vector<float> row_logits{};     ///< scoring requests: the score_rows' logits, in their order
  /// Embedding requests: the pooled final hidden state (model width, not normalised).
  std::vector<float> embedding{};
};

/// Receives a request's events, on an engine thread: implementations must be
/// thread-safe and must not block (post to the connection's own executor).
class request_sink {
 public:
  virtual ~request_sink() = default;
  virtual void on_token(const token_event& event) = 0;
  /// Called exactly once, last.
  virtual void on_finish(const finish_event& event) = 0;
};

struct engine_snapshot {
  engine_gauges gauges;
  std::uint64_t num_steps = 0;
  int num_free_blocks = 0;
  int num_blocks = 0;
  double backend_seconds = 0.0;   ///< total time inside the backend
  double engine_seconds = 0.0;    ///< total time of steps, end to end (plan -> applied)
  double batch_size_sum = 0.0;    ///< sum over steps of sequences per step
  double kv_usage_sum = 0.0;      ///< sum over steps of KV usage
  std::uint64_t num_failed_steps = 0;    ///< backend (or engine) steps that failed, since start
  int num_consecutive_failed_steps = 0;  ///< failed steps since the last one that succeeded
  std::string last_step_error;           ///< message of the last failed step ("" = none yet)
  int num_waiting_to_start = 0;          ///< requests in the admission bound (server.max_waiting_requests)
  std::int64_t num_waiting_tokens = 0;   ///< their prompt tokens (server.max_waiting_tokens)
  bool is_idle = true;                   ///< no sequence, no step and no block release pending
};

/// What /health reports. A failed step fails only its own requests; the engine serves
/// on. It is unhealthy once engine.unhealthy_after_failed_steps steps failed in a row
/// (the backend is likely broken, not one request), until a step succeeds again.
struct engine_health {
  bool is_healthy = true;
  bool is_stopped = false;
  int num_consecutive_failed_steps = 0;
  std::uint64_t num_failed_steps = 0;
  std::string last_step_error;
};

/// Seconds on the engine's monotonic clock: the clock of every timestamp its events carry.
double engine_now();

class engine_api {
 public:
  virtual ~engine_api() = default;

  /// Queues a request; its events go to `sink`. Refused (invalid_argument) for an
  /// empty or too long prompt or bad parameters, (queue_full) when the waiting queue is
  /// full, (shutting_down) while shutting down, (unavailable) when no engine can take it.
  virtual result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) = 0;
  /// Queues several requests that start together, all or none: a refusal of any (as
  /// submit() refuses) refuses them all and leaves none queued. The in-process engine
  /// plans none of them into a step before all are queued (a burst that arrives at
  /// once, the choices of one HTTP request); this default submits them one by one and
  /// cancels those already queued when one is refused (their sinks may still hear of it).
  virtual result<std::vector<request_id>> submit_all(std::vector<submission> requests);
  /// Stops a request within one step; its sink gets on_finish(cancelled).
  virtual void cancel(request_id id) = 0;
  virtual engine_snapshot snapshot() const = 0;
  /// Stops admitting, lets running requests finish for up to `grace_s`, cancels the
  /// rest. Idempotent.
  virtual void shutdown(double grace_s) = 0;
  virtual engine_health health() const = 0;
  /// The model as the gateway sees it (tokenizer, chat template, limits; a router's has no weights).
  virtual const loaded_model& model() const = 0;
  virtual const deployment& settings() const = 0;
  virtual engine_metrics& metrics() = 0;
  virtual std::string render_metrics() const = 0;
  /// The one receiver of step summaries (nullptr stops them). A router's come from every
  /// engine behind it, each summary naming its engine (step_summary::engine).
  virtual void set_step_sink(std::shared_ptr<step_sink> sink) = 0;
  virtual bool has_step_sink() const = 0;
  /// The engines behind a router ("host:port", in its configured order); empty for an
  /// engine in this process.
  virtual std::vector<std::string> engine_addresses() const { return {}; }

  /// The LoRA adapters requests may name, in the order they were registered. This
  /// default: the deployment's lora.adapters (what a router's engines were given).
  virtual std::vector<lora_adapter_info> lora_adapters() const;
  /// Registers and loads the adapter at `path` under `name` (invalid_argument: the name
  /// is taken, or the adapter does not fit the model). This default: unsupported.
  virtual result<void> load_lora_adapter(const std::string& name, const std::string& path);
  /// Forgets the adapter `name` (not_found); its running requests finish with it. This
  /// default: unsupported.
  virtual result<void> unload_lora_adapter(const std::string& name);
};

}  // namespace inflight
