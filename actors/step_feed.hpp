#pragma once
/// The engine's side of the live step feed (GET /v1/engine/events, the web UI): the
/// scheduler actor summarises each step (core/engine/metrics/step_summary.hpp) and hands it
/// to one sink, which fans it out to subscribers with bounded buffers (the gateway).
/// With no sink installed the scheduler builds nothing: one relaxed atomic load a step.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/engine/metrics/step_summary.hpp"
#include "core/engine/sched/scheduler.hpp"

namespace inflight {

/// Receives a summary of every step on the scheduler actor's thread: implementations
/// must be thread-safe and must not block.
class step_sink {
 public:
  virtual ~step_sink() = default;
  virtual void on_step(const step_summary& step) = 0;
};

/// Shared by the engine facade (which installs the sink) and the scheduler actor
/// (which publishes to it).
class step_feed {
 public:
  /// Any thread; nullptr stops the feed.
  void set_sink(std::shared_ptr<step_sink> sink);
  bool is_active() const { return is_active_.load(std::memory_order_relaxed); }
  /// The scheduler's thread.
  void publish(const step_summary& step);

 private:
  std::atomic<bool> is_active_{false};
  std::mutex mutex_;
  std::shared_ptr<step_sink> sink_;
};

/// Scheduler-actor state that turns its steps into summaries while the feed is active.
/// The scheduler actor calls it at three points of its loop; each is a no-op while the
/// feed is off.
class step_recorder {
 public:
  /// A plan was made at `start_s` and goes to the executor.
  void on_planned(const step_feed& feed, const step_plan& plan, const scheduler& sched, double start_s);
  /// Events were routed to requests (a step's, or a cancel's between steps).
  void on_events(const step_feed& feed, const std::vector<seq_event>& events);
  /// The planned step's result was applied at `end_s`: publish its summary.
  void on_applied(step_feed& feed, const scheduler& sched, double end_s);
  /// No step is open at `now_s`: finishes that no step will carry (a cancel that left
  /// nothing to run, or whose step turned out empty) are published now, as a summary of
  /// no steps (num_steps 0) with the counts they leave, so a reader sees every finish.
  void on_idle(step_feed& feed, const scheduler& sched, double now_s);

 private:
  /// What the previous step left behind, to tell preemptions from finishes.
  struct baseline {
    std::vector<seq_id> running;
    std::uint64_t num_preemptions = 0;
  };
  /// Adds the finishes since the last summary and the counts the step left, publishes.
  void publish(step_feed& feed, const scheduler& sched, step_summary& s);

  std::optional<step_summary> draft_;
  std::optional<baseline> before_;
  std::vector<step_finish> finished_;  ///< since the last published step
  std::uint64_t last_step_id_ = 0;     ///< of the last published summary
};

}  // namespace inflight
