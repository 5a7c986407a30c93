#pragma once
/// The engine_api of a router: each request goes to one of several engines in other
/// processes (remote_engine), the one a routing policy (core/route) picks. The gateway
/// in front of it is the same as in front of an in-process engine.
///
///   - Routing sees each engine's availability, its load as the engine reports it (plus
///     what this router sent since), and the prompt's KV block hashes (under its
///     cache_salt) against an exact index of what each engine caches, kept from the
///     engines' own reports (core/route/engine_report.hpp: a full one on each connect,
///     then deltas after their steps). An engine that goes away leaves the index.
///   - Faults: an engine that goes away is marked unavailable at once (its streams end
///     with an `unavailable` error, see remote_engine); a request that had produced no
///     token yet is sent again to another engine instead, unseen by the client. Engines
///     that are down, or not yet up, are tried again every `reconnect_interval_s`: an
///     engine that starts late or restarts joins without restarting the router.
///   - Drains: an engine that stops taking requests (SIGTERM) says so over its port and
///     leaves the choice at once; a request it refuses with `shutting_down` (sent before
///     its word arrived), or ends with `shutting_down` before its first token, goes to
///     another engine. It rejoins when its next process connects. With every engine
///     draining or down, a request gets 503 `unavailable` (with Retry-After).

#include <caf/all.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actors/cluster/remote_engine.hpp"
#include "actors/engine_api.hpp"
#include "core/route/router.hpp"

namespace inflight {

struct router_options {
  std::vector<std::string> engines;     ///< host:port of each engine_host
  std::string policy = "least_load";    ///< a routing policy in the plugin directory
  route_settings policy_settings;
  std::string plugin_dir;               ///< where inflight_route_<policy>.so is
  double timeout_s = 10.0;              ///< an engine's answer to a submit
  double reconnect_interval_s = 1.0;
  double metrics_timeout_s = 2.0;       ///< an engine's answer to a metrics scrape
  /// Several models ([[models]] on both sides): the model this router serves, by name;
  /// only the engines whose process serves it take its requests (the others count as
  /// not connected, and are asked again every reconnect_interval_s). Empty: whatever
  /// each engine serves.
  std::string model;
};

/// "host:port" -> (host, port); an error names what is wrong.
result<std::pair<std::string, std::uint16_t>> try_parse_endpoint(const std::string& text);

class routed_engine final : public engine_api {
 public:
  /// `model`: the tokenizer and chat template the gateway uses (no weights needed).
  /// Engines not reachable yet are not an error: they join when they come up.
  static result<std::unique_ptr<routed_engine>> start(const deployment& d, loaded_model model, caf::actor_system& net,
                                                      router_options options);
  ~routed_engine() override;

  result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) override;
  void cancel(request_id id) override;
  engine_snapshot snapshot() const override;
  void shutdown(double grace_s) override;
  engine_health health() const override;
  const loaded_model& model() const override { return model_; }
  const deployment& settings() const override { return settings_; }
  engine_metrics& metrics() override { return *metrics_; }
  /// The router's own metrics, then each engine's under engine="host:port", merged
  /// family by family (core/engine/metrics/prometheus_merge.hpp).
  std::string render_metrics() const override;
  /// Subscribes to every connected engine's steps (and each engine that connects while
  /// the sink is set); each summary goes to `sink` with its engine's address.
  void set_step_sink(std::shared_ptr<step_sink> sink) override;
  bool has_step_sink() const override;
  std::vector<std::string> engine_addresses() const override { return options_.engines; }

  /// Engines connected now.
  int num_connected() const;
  /// Engines connected now and not draining: those requests go to.
  int num_serving() const;
  /// Whether engine `i` said it drains (until its next process connects).
  bool is_draining(int i) const;
  /// Requests sent to engine `i` so far (retries included).
  std::uint64_t num_routed(int i) const { return router_.num_routed(i); }
  /// KV blocks the router's prefix index holds for engine `i` (from its reports).
  std::size_t num_indexed_blocks(int i) const { return router_.num_indexed_blocks(i); }
  /// Whether engine `i` reported KV blocks of another size than this router's (its
  /// reports are refused: the index cannot match its cache).
  bool has_block_size_mismatch(int i) const;
  /// Requests sent again because their engine went away before their first token.
  std::uint64_t num_retried() const;

 private:
  struct live_request;
  class routing_sink;
  /// Where the engines' reports go while this router lives (they arrive on actor threads).
  struct report_target {
    std::mutex mutex;
    routed_engine* owner = nullptr;
  };

  routed_engine(const deployment& d, loaded_model model, caf::actor_system& net, router_options options,
                route_policy policy);
  /// Sends `live` to an engine; false (with `failure`) when none took it.
  bool dispatch(const std::shared_ptr<live_request>& live, error& failure);
  /// Connects to engine `i`, subscribed to its reports under a new generation.
  result<std::unique_ptr<remote_engine>> connect(int i);
  /// An engine's report into the router's index and load (one from a replaced
  /// connection is dropped); a block size that differs is said once on stderr.
  void on_report(int i, std::uint64_t generation, const engine_report& report);
  /// Engine `i` said it drains (one from a replaced connection is dropped).
  void on_drain(int i, std::uint64_t generation);
  /// Takes engine `i` out of the choice until its next process connects. Under mutex_.
  void mark_draining(int i);
  std::string render_own_metrics() const;
  /// Engine `i`'s summaries, named, into `sink` (none: unsubscribes). Under mutex_.
  void watch_steps(std::size_t i, const std::shared_ptr<step_sink>& sink);
  void on_finished(const std::shared_ptr<live_request>& live, const finish_event& ev);
  void reconnect_loop();
  /// Runs `job` on the worker thread; false once closing.
  bool post(std::function<void()> job);
  void worker_loop();

  deployment settings_;
  loaded_model model_;
  caf::actor_system& net_;
  router_options options_;
  std::unique_ptr<engine_metrics> metrics_;
  router router_;

  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<remote_engine>> engines_;  // null: not connected
  std::vector<std::uint64_t> generations_;   // of each engine's connection
  std::vector<bool> is_draining_;            // said so; cleared when a new connection is made
  std::vector<bool> is_block_size_reported_;
  std::shared_ptr<report_target> report_target_ = std::make_shared<report_target>();
  std::shared_ptr<step_sink> step_sink_;  // the live step feed's, while someone watches
  std::unordered_map<request_id, std::shared_ptr<live_request>> live_;
  request_id next_id_ = 1;
  std::uint64_t num_retried_ = 0;
  bool is_stopping_ = false;
  std::condition_variable changed_;

  // Retries and reconnects run here, never on an actor thread (remote_engine::submit blocks).
  std::mutex jobs_mutex_;
  std::condition_variable jobs_changed_;
  std::deque<std::function<void()>> jobs_;
  bool is_closing_ = false;
  std::thread worker_;
  std::thread reconnector_;
};

}  // namespace inflight
