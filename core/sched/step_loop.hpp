#pragma once
/// One engine step, defined once: schedule -> grant -> execute -> apply.
///
///   sched.schedule()      -> kv_request   the policy's decision, validated
///   kv.try_grant(request) -> kv_grant     blocks, preemptions (the one KV owner)
///   sched.on_grant(grant) -> step_plan    empty when nothing runs
///   execute(plan)         -> step_result  injected: a backend, a fake, a cost model
///   sched.apply(result)   -> seq_events   tokens and finishes
///
/// step_loop owns the scheduler and its kv_manager and runs the four calls in order;
/// the clock is the scheduler's (injected at creation), so a caller that sets the time
/// (the simulator's virtual clock, the tests' counting clock) decides every timestamp.
/// A failed grant or executor finishes the step's sequences with the error, as the
/// engine does, and the loop goes on.
///
/// How the engine's actors map onto it (they keep the calls apart on purpose, so that
/// the KV manager has one owner and the executor its own thread):
///   scheduler actor    submit / cancel / finish, then schedule(); on_grant() and apply()
///                      in the replies; fail_step() on a failed reply (maybe_step,
///                      on_grant, on_step_done in actors/scheduler_actor.cpp)
///   kv-allocator actor kv.try_grant() (actors/kv_allocator_actor.cpp)
///   executor actor     execute(plan) on the backend (actors/executor_actor.cpp)
/// The actors do not use this class yet; it is what they run, spread over callbacks.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/kv/kv_manager.hpp"
#include "core/sched/scheduler.hpp"
#include "core/sched/step_shape.hpp"

namespace inflight {

/// What one step did.
struct step_outcome {
  std::uint64_t step_id = 0;      ///< 0: nothing ran (at most, blocks went back)
  step_shape shape;               ///< the sizes of what ran (for a step-cost model)
  /// Finishes of the sequences the policy shed, then tokens and finishes in plan order.
  std::vector<seq_event> events;
  /// The grant or the executor failed: the step's sequences finished with this cause
  /// (their finished events are in `events`).
  std::optional<error> failure;

  bool has_run() const { return step_id != 0; }
};

class step_loop {
 public:
  /// Runs one step plan: a backend, a fake one, or a cost model.
  using executor_fn = std::function<result<step_result>(const step_plan&)>;

  /// A KV manager of `num_blocks` blocks of `block_size` tokens and a scheduler on it.
  static result<step_loop> try_create(const scheduler_config& config, int num_blocks, int block_size,
                                      policy pol, scheduler::clock_fn clock = {});
  /// From a scheduler created on `kv`'s snapshot (a caller that sets observers first).
  step_loop(scheduler sched, kv_manager kv) : sched_(std::move(sched)), kv_(std::move(kv)) {}

  result<void> submit(seq_request request) { return sched_.submit(std::move(request)); }
  result<seq_event> cancel(seq_id id) { return sched_.cancel(id); }
  result<seq_event> finish(seq_id id, finish_reason reason, std::optional<error> cause = {}) {
    return sched_.finish(id, reason, std::move(cause));
  }

  /// Work to run, or blocks to give back: step() has something to do.
  bool needs_step() const { return sched_.has_work() || sched_.has_pending_releases(); }
  /// One whole step. An error only for a call out of order (after plan() without
  /// apply()); a failed grant or executor is the outcome's `failure`.
  result<step_outcome> step(const executor_fn& execute);

  // The halves of a step, for a caller that looks between them (tests).
  /// schedule() and the grant: the plan to execute (empty when nothing runs).
  result<step_plan> plan();
  result<std::vector<seq_event>> apply(const step_result& result) { return sched_.apply(result); }
  /// The pending request or step failed: its sequences finish with `cause`.
  std::vector<seq_event> fail_step(const error& cause) { return sched_.fail_step(cause); }

  scheduler& sched() { return sched_; }
  const scheduler& sched() const { return sched_; }
  const kv_manager& kv() const { return kv_; }
  /// The kv request of the last step.
  const kv_request& last_request() const { return last_request_; }

 private:
  step_outcome failed(step_outcome out, error cause);

  scheduler sched_;
  kv_manager kv_;
  kv_request last_request_;
};

}  // namespace inflight
