#pragma once
/// Fans the engine's step summaries out to the subscribers of GET /v1/engine/events.
/// Each subscriber has its own step_queue (server.events_queue_size entries of at most
/// server.events_max_seqs sequences): a reader that falls behind gets aggregated
/// events, never an unbounded backlog, and never slows the engine. At most
/// server.events_max_subscribers at once. The fan-out is the engine's step sink only
/// while someone subscribes: with nobody listening the scheduler summarises nothing.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/engine_api.hpp"
#include "actors/gateway/errors.hpp"
#include "actors/step_feed.hpp"

namespace inflight::gateway {

class step_fanout;

/// One subscriber's end: what it has not read yet.
class step_subscription {
 public:
  ~step_subscription();
  step_subscription(const step_subscription&) = delete;
  step_subscription& operator=(const step_subscription&) = delete;

  /// Everything queued, oldest first (entries with num_steps > 1 were aggregated).
  /// When nothing is queued, the next step calls the wake function once.
  std::vector<step_summary> take();
  /// Called (on the engine's thread; it must only post) when a step arrives after a
  /// take() that found nothing.
  void set_wake(std::function<void()> wake);
  /// The engine whose steps this subscriber gets: a router's engine ("host:port"), or
  /// empty for the engine in this process.
  const std::string& engine() const { return engine_; }

 private:
  friend class step_fanout;
  step_subscription(std::shared_ptr<step_fanout> owner, std::size_t capacity, std::size_t max_seqs,
                    std::string engine);

  std::shared_ptr<step_fanout> owner_;
  const std::string engine_;
  // Guarded by owner_->mutex_.
  step_queue queue_;
  std::function<void()> wake_;
  bool is_wake_armed_ = false;
};

class step_fanout final : public step_sink, public std::enable_shared_from_this<step_fanout> {
 public:
  step_fanout(engine_api& eng, const server_settings& settings);

  /// A new subscriber to the steps of `engine` (step_summary::engine: a router's
  /// "host:port", empty in one process; steps of other engines never reach its queue, so
  /// its aggregated events never mix engines), or 503 (code too_many_subscribers) at
  /// server.events_max_subscribers.
  api_result<std::shared_ptr<step_subscription>> try_subscribe(std::string engine = {});
  int num_subscribers() const;
  void on_step(const step_summary& step) override;

 private:
  friend class step_subscription;
  void unsubscribe(step_subscription* sub);

  engine_api& engine_;
  server_settings settings_;
  std::mutex install_mutex_;  // orders installing the sink; taken before mutex_, never under it
  mutable std::mutex mutex_;
  std::vector<step_subscription*> subscribers_;
};

}  // namespace inflight::gateway
