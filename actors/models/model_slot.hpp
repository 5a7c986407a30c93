#pragma once
/// One model of a server that loads models on demand: the engine_api the gateway holds
/// for it, whether or not its engine runs. While it is unloaded (or loading) requests
/// wait in it, bounded by server.max_waiting_requests, and go to the engine once it runs
/// (or finish with the load's error); while it is loaded they go straight through. It
/// counts its requests, so that the pool (model_pool.hpp) unloads it only when none runs
/// or waits. Its model() is the model without weights: the tokenizer, chat template and
/// limits the gateway needs, which stay while the weights come and go.

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "actors/engine_api.hpp"
#include "actors/model_control.hpp"

namespace inflight {

class model_slot final : public engine_api {
 public:
  using clock = std::chrono::steady_clock;
  /// `wants_load`: a request arrived while no engine runs (called without the slot's
  /// lock held); `became_idle`: its last request finished.
  struct hooks {
    std::function<void(model_slot&)> wants_load;
    std::function<void()> became_idle;
  };

  /// `info`: the loaded model or its probe; its weights are dropped here (only their
  /// config stays). `keep_alive_s`: server.keep_alive or the model's own.
  model_slot(deployment settings, const loaded_model& info, double keep_alive_s, hooks h);
  ~model_slot() override;

  // engine_api
  result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) override;
  result<std::vector<request_id>> submit_all(std::vector<submission> requests) override;
  void cancel(request_id id) override;
  engine_snapshot snapshot() const override;
  /// Fails the waiting requests, shuts the engine down; a load finishing later is dropped.
  void shutdown(double grace_s) override;
  engine_health health() const override;
  const loaded_model& model() const override { return info_; }
  const deployment& settings() const override { return settings_; }
  engine_metrics& metrics() override { return *metrics_; }
  std::string render_metrics() const override;
  void set_step_sink(std::shared_ptr<step_sink> sink) override;
  bool has_step_sink() const override;
  /// Its adapters are those of its [models.lora]; run-time loads would not outlive an unload.
  result<void> load_lora_adapter(const std::string& name, const std::string& path) override;
  result<void> unload_lora_adapter(const std::string& name) override;

  // For the pool.
  const std::string& name() const { return info_.name; }
  /// Counters that every engine of this model adds to (they outlive an unload).
  std::shared_ptr<engine_metrics> shared_metrics() const { return metrics_; }
  model_status status() const;
  model_state state() const;
  bool is_idle() const;           ///< no request runs or waits
  bool has_waiting() const;       ///< requests wait for a load
  clock::time_point last_used() const;
  double keep_alive_s() const;
  void set_keep_alive(double seconds);
  /// The size the pool counts: measured once loaded, `estimate` before.
  std::int64_t size_bytes() const;
  void set_estimate(std::int64_t bytes);
  /// False when it was shut down (or is not unloaded/failed): nothing to load.
  bool try_begin_load();
  /// The load's engine: it runs, and the waiting requests go to it. False when the slot
  /// was shut down meanwhile: the caller shuts `eng` down.
  bool attach(std::shared_ptr<engine_api> eng, std::int64_t size_bytes);
  /// The load failed: the waiting requests finish with `why` (errc::unavailable).
  void fail_load(const error& why);
  /// The engine when no request runs or waits (the slot is then unloaded), else null.
  std::shared_ptr<engine_api> detach_if_idle();

 private:
  struct waiting {
    std::vector<request_id> ids;        ///< this slot's ids, one per submission
    std::vector<submission> requests;   ///< started together (submit_all) when several
  };
  struct finished_sink;
  /// Sends `w` to engine_ (the lock held); the refusal, if any, for the caller to
  /// deliver to the sinks once unlocked.
  std::optional<error> forward_locked(waiting& w);
  void on_finished(request_id id);
  result<std::vector<request_id>> enqueue(std::vector<submission> requests);

  deployment settings_;
  loaded_model info_;
  std::shared_ptr<engine_metrics> metrics_ = std::make_shared<engine_metrics>();
  hooks hooks_;

  mutable std::mutex mutex_;
  std::shared_ptr<engine_api> engine_;  ///< null unless loaded
  model_state state_ = model_state::unloaded;
  std::string last_error_;
  std::deque<waiting> waiting_;
  int num_waiting_ = 0;                 ///< submissions in waiting_
  /// Requests at the engine: this slot's id -> the engine's.
  std::unordered_map<request_id, request_id> running_;
  request_id next_id_ = 1;
  clock::time_point last_used_ = clock::now();
  double keep_alive_s_ = -1.0;
  std::int64_t size_bytes_ = 0;
  std::int64_t estimate_bytes_ = 0;
  std::shared_ptr<step_sink> step_sink_;
  bool is_shut_down_ = false;
};

/// Bytes of a model's weights as they lie in memory (matrices in their storage type,
/// vectors as f32).
std::int64_t weight_bytes(const model_weights& w);

/// Bytes of the KV cache `d` gives a model of `config`: engine.kv_blocks blocks when set,
/// else engine.kv_memory.
std::int64_t kv_cache_bytes(const deployment& d, const model_config& config);

}  // namespace inflight
