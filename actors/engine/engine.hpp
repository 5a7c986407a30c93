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
#include "core/base/error.hpp"
#include "core/config/deployment.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/engine/spec/spec_config.hpp"
#include "core/model/model_loader.hpp"

namespace inflight {

/// The directory the engine loads policies from: the deployment's plugin_dir, else
/// $INFLIGHT_PLUGIN_DIR, else next to the running binary (core/engine/sched/plugin_dir.hpp).
result<std::filesystem::path> try_policy_plugin_dir(const scheduler_settings& s);

/// The scheduler's speculative decoding settings from the deployment's [speculative].
speculative_config speculative_config_of(const speculative_settings& s);

class cache_sink;  // actors/cache_feed.hpp

class engine final : public engine_api {
 public:
  /// Loads nothing itself: `model` comes from load_model(). `metrics`: counters that
  /// outlive this engine (a model loaded again counts on); null = its own.
  static result<std::unique_ptr<engine>> start(const deployment& d, loaded_model model,
                                               std::shared_ptr<engine_metrics> metrics = nullptr);
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
  /// LoRA adapters: lora.adapters from the start, and those loaded since (lora_registry).
  std::vector<lora_adapter_info> lora_adapters() const override;
  result<void> load_lora_adapter(const std::string& name, const std::string& path) override;
  result<void> unload_lora_adapter(const std::string& name) override;

  struct impl;

 private:
  explicit engine(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace inflight
