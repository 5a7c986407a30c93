#pragma once
/// The engine's reports to routers (core/route/engine_report.hpp): after each step the
/// kv-allocator actor hands the scheduler actor its prefix cache's delta with the grant,
/// and the scheduler actor publishes it with its load to one sink (an engine_host,
/// actors/cluster/remote_engine.hpp, which forwards it to the routers connected to it). With no
/// sink installed nothing is published.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "core/route/engine_report.hpp"

namespace inflight {

/// Receives the engine's reports on the scheduler actor's thread, in order:
/// implementations must be thread-safe and must not block.
class cache_sink {
 public:
  virtual ~cache_sink() = default;
  virtual void on_report(const engine_report& report) = 0;
};

/// Shared by the engine facade (which installs the sink) and the scheduler actor
/// (which publishes to it).
class cache_feed {
 public:
  /// Any thread; nullptr stops the feed.
  void set_sink(std::shared_ptr<cache_sink> sink);
  bool is_active() const { return is_active_.load(std::memory_order_relaxed); }
  /// The scheduler's thread: publishes `report` unless it is a delta that changes
  /// nothing since the last one published.
  void publish(const engine_report& report);

 private:
  std::atomic<bool> is_active_{false};
  std::mutex mutex_;
  std::shared_ptr<cache_sink> sink_;
  std::optional<engine_report> last_;  ///< its load, to leave out reports that change nothing
};

}  // namespace inflight
