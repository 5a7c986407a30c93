#pragma once
/// The in-process engine: starts the actors for a deployment, takes requests and
/// streams their events to a sink. The gateway, `inflight generate` and
/// `inflight bench offline` all drive the engine through this API.

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine_api.hpp"
#include "core/config/deployment.hpp"
#include "core/base/error.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/model/model_loader.hpp"
#include "core/engine/sched/sequence.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {


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

/// The directory the engine loads policies from: the deployment's plugin_dir, else
/// $INFLIGHT_PLUGIN_DIR, else next to the running binary (core/engine/sched/plugin_dir.hpp).
result<std::filesystem::path> try_policy_plugin_dir(const scheduler_settings& s);

class cache_sink;  // actors/cache_feed.hpp

class engine final : public engine_api {
 public:
  /// Loads nothing itself: `model` comes from load_model().
  static result<std::unique_ptr<engine>> start(const deployment& d, loaded_model model);
  ~engine() override;
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) override;
  /// One message to the scheduler: every request is queued before the next step's plan.
  result<std::vector<request_id>> submit_all(std::vector<submission> requests) override;
  void cancel(request_id id) override;
  engine_snapshot snapshot() const override;
  void shutdown(double grace_s) override;
  /// See engine_health.
  engine_health health() const override;
  bool is_healthy() const { return health().is_healthy; }
  const loaded_model& model() const override;
  const deployment& settings() const override;
  /// Where the policy plugin was loaded from (see core/engine/sched/plugin_dir.hpp).
  const std::filesystem::path& plugin_dir() const;
  engine_metrics& metrics() override;
  std::string render_metrics() const override;
  /// Installs the one receiver of step summaries (actors/step_feed.hpp); nullptr stops
  /// them. While none is installed the scheduler summarises nothing.
  void set_step_sink(std::shared_ptr<step_sink> sink) override;
  /// Whether a step sink is installed (the scheduler summarises its steps).
  bool has_step_sink() const override;
  /// Installs the one receiver of cache and load reports (actors/cache_feed.hpp);
  /// nullptr stops them.
  void set_cache_sink(std::shared_ptr<cache_sink> sink);
  /// Has the next report to the cache sink be a full one (every cached block), after
  /// the deltas already under way.
  void request_full_report();

  struct impl;

 private:
  explicit engine(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace inflight
