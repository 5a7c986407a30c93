#pragma once
/// What every connection of one server shares: the engine, the served model, the
/// settings, the stored responses (/v1/responses), the shutdown flag and the registry of
/// live sessions (to close them on shutdown).

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/engine_api.hpp"
#include "actors/gateway/api_keys.hpp"
#include "actors/gateway/responses_store.hpp"
#include "actors/gateway/served_model.hpp"
#include "actors/gateway/step_fanout.hpp"

namespace inflight::gateway {

/// A connection the server can ask to finish: finish what streams, then close.
class session_base {
 public:
  virtual ~session_base() = default;
  /// Thread-safe: posts to the session's strand.
  virtual void stop() = 0;
  /// Cancels the session's running requests (shutdown after the grace period); their
  /// streams end with finish_reason "abort". Thread-safe.
  virtual void abort_requests() = 0;
};

class gateway_state {
 public:
  gateway_state(engine_api& eng, served_model model, server_settings settings, std::string version,
                api_keys keys = {})
      : engine_(eng), model_(std::move(model)), settings_(std::move(settings)), version_(std::move(version)),
        keys_(std::move(keys)) {
    model_.adapters = [e = &eng] {
      std::vector<std::string> names;
      for (const auto& a : e->lora_adapters()) names.push_back(a.name);
      return names;
    };
  }

  engine_api& eng() { return engine_; }
  const served_model& model() const { return model_; }
  const server_settings& settings() const { return settings_; }
  const std::string& version() const { return version_; }
  /// The API keys a request must carry one of (none: open).
  const api_keys& keys() const { return keys_; }
  /// The stored responses of /v1/responses (thread-safe).
  responses_store& responses() { return responses_; }
  /// The subscribers of GET /v1/engine/events.
  step_fanout& steps() { return *steps_; }
  bool is_shutting_down() const { return is_shutting_down_; }
  void set_shutting_down() { is_shutting_down_ = true; }

  void add_session(const std::shared_ptr<session_base>& s) {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    sessions_.push_back(s);
  }
  /// Asks every live session to stop.
  void stop_sessions() {
    for (const auto& s : live_sessions()) s->stop();
  }
  /// Asks every live session to cancel its requests.
  void abort_requests() {
    for (const auto& s : live_sessions()) s->abort_requests();
  }
  /// Engine requests submitted through this server that have not finished (their
  /// finish event has not run on the connection's strand yet).
  int num_live_requests() const { return num_live_requests_; }
  void add_live_request() { ++num_live_requests_; }
  void remove_live_request() { --num_live_requests_; }
  int num_sessions() {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
    return int(sessions_.size());
  }

 private:
  std::vector<std::shared_ptr<session_base>> live_sessions() {
    std::vector<std::shared_ptr<session_base>> live;
    std::lock_guard lock(mutex_);
    for (const auto& w : sessions_)
      if (auto s = w.lock()) live.push_back(std::move(s));
    return live;
  }

  engine_api& engine_;
  served_model model_;
  server_settings settings_;
  std::string version_;
  api_keys keys_;
  std::atomic<bool> is_shutting_down_{false};
  std::atomic<int> num_live_requests_{0};
  std::mutex mutex_;
  std::vector<std::weak_ptr<session_base>> sessions_;
  std::shared_ptr<step_fanout> steps_ = std::make_shared<step_fanout>(engine_, settings_);
  responses_store responses_{std::size_t(std::max(0, settings_.responses_store_max)), settings_.responses_store_ttl_s};
};

}  // namespace inflight::gateway
