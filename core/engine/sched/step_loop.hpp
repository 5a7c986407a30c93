#pragma once
/// One engine step, defined once: open -> grant -> execute -> apply.
///
///   open()                -> expired and shed finishes, the step's kv_request
///   kv.try_grant(request) -> kv_grant     blocks, preemptions (the one KV owner)
///   on_grant(grant)       -> step_plan    empty when nothing runs
///   on_drafts(drafts)     -> step_plan    with the draft model's tokens (when it has work)
///   execute(plan)         -> step_result  a backend, a fake, a cost model
///   on_result(result)     -> seq_events   tokens and finishes
///
/// step_loop owns the scheduler and what the engine enforces around it, on the
/// scheduler's clock (injected at creation, so a caller that sets the time, the
/// simulator's virtual clock or the tests' counting clock, decides every timestamp):
///   - queue expiry: a request not started server.max_queue_time_s after its arrival
///     fails with errc::queue_timeout;
///   - deadlines: a request past its own timeout_s finishes aborted with errc::timeout;
///   - the admission gate: a request entered it when it was accepted (engine::submit,
///     any thread); it leaves when it first runs or finishes without having run;
///   - refusals while draining, and the totals of steps and failed steps.
/// A failed grant or executor finishes the step's sequences with the error, and the
/// loop goes on. Every finished event carries the sequence's timestamps: request
/// timings come from here.
///
/// Two ways to drive it:
///   - step(execute): the whole step, with the loop's own kv_manager (the simulator, the
///     tests).
///   - the phases open() / on_grant() / on_result(), when the KV owner and the executor
///     live elsewhere: the engine's scheduler actor sends open()'s request to the
///     kv-allocator actor and the plan to the executor actor, and feeds their replies
///     back (actors/engine/scheduler_actor.cpp). The actors only carry the messages.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/kv/kv_manager.hpp"
#include "core/engine/sched/admission_gate.hpp"
#include "core/engine/sched/scheduler.hpp"
#include "core/engine/step/step_shape.hpp"

namespace inflight {

/// What the loop enforces around the scheduler.
struct step_loop_options {
  /// A request not started this many seconds after its arrival fails with
  /// errc::queue_timeout (server.max_queue_time_s); 0 = no limit.
  double max_queue_time_s = 0.0;
  /// The bound on requests waiting to start; the loop releases what its requests hold.
  /// None: no bound.
  std::shared_ptr<admission_gate> gate;
  /// try_create: blocks of the loop's KV manager's draft space (speculative decoding's
  /// draft model; its config's speculative.draft_model_context says how long a sequence
  /// it takes). 0: none.
  int num_draft_blocks = 0;
};

/// Steps the loop ran.
struct step_totals {
  std::uint64_t num_steps = 0;         ///< steps the executor answered (failed ones included)
  std::uint64_t num_failed_steps = 0;  ///< failed grants and failed executions
  std::uint64_t num_consecutive_failed_steps = 0;
  std::string last_step_error;
  std::uint64_t num_failed_drafts = 0;  ///< draft model runs that failed (their steps checked no draft)
};

/// What one whole step did.
struct step_outcome {
  std::uint64_t step_id = 0;      ///< 0: nothing ran (at most, blocks went back)
  step_shape shape;               ///< the sizes of what ran (for a step-cost model)
  /// Expired and shed finishes, then tokens and finishes in plan order.
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
                                      policy pol, scheduler::clock_fn clock = {},
                                      step_loop_options options = {});
  /// From a scheduler created on `kv`'s snapshot (a caller that sets observers first).
  step_loop(scheduler sched, kv_manager kv, step_loop_options options = {});
  /// Without a KV manager: the caller's KV owner answers open()'s requests (phases only).
  explicit step_loop(scheduler sched, step_loop_options options = {});

  // ---- requests ---------------------------------------------------------------------
  /// Queues a request. A refusal (a bad request, or any after drain()) is its finished
  /// event, to route like any other; none when it was queued.
  std::optional<seq_event> submit(seq_request request);
  /// Ends a live sequence; none when it is not live (it finished meanwhile).
  std::optional<seq_event> finish(seq_id id, finish_reason reason, std::optional<error> cause = {});
  std::optional<seq_event> cancel(seq_id id) { return finish(id, finish_reason::cancelled); }
  /// From now on every submit is refused (aborted, errc::shutting_down).
  void drain() { is_accepting_ = false; }
  bool is_accepting() const { return is_accepting_; }
  /// Drains and ends every live sequence with `cause` (aborted): their finished events.
  std::vector<seq_event> abort_all(const error& cause);

  // ---- the phases -------------------------------------------------------------------
  /// Work to run, or blocks to give back: a step has something to do.
  bool needs_step() const { return sched_.has_work() || sched_.has_pending_releases(); }
  /// A step is open (its grant or its result is awaited).
  bool is_stepping() const { return sched_.has_pending_step(); }
  struct opening {
    std::vector<seq_event> events;      ///< expired and shed requests' finishes: route them now
    std::optional<kv_request> request;  ///< for the KV owner; none: no step (nothing needs one)
  };
  /// Opens a step: requests past their queue time or deadline finish, the policy
  /// decides. Call it when no step is open.
  opening open();
  struct granted {
    step_plan plan;                ///< to execute; empty: nothing runs, the step is over
    /// The draft model's work: run it and hand its result to on_drafts() before the plan.
    std::optional<draft_plan> drafts;
    std::vector<seq_event> events; ///< a failed grant's finishes
  };
  /// The KV owner's answer to open()'s request.
  granted on_grant(result<kv_grant> grant);
  /// The draft model's answer to granted::drafts: its tokens go into `plan` (a failure:
  /// the step runs without them).
  void on_drafts(step_plan& plan, result<draft_result> drafts);
  /// The executor's answer to the plan: tokens and finishes (a failure's finishes).
  std::vector<seq_event> on_result(result<step_result> result);
  /// The earliest time (scheduler's clock) at which a live request expires or passes its
  /// deadline: when to open a step even if nothing else happens. None: no limit.
  std::optional<double> next_deadline() const;

  // ---- a whole step, with the loop's own KV manager ---------------------------------
  /// One whole step. An error only for a call out of order (a step open, or no KV
  /// manager); a failed grant or executor is the outcome's `failure`. `draft_execute`
  /// runs the draft model's steps (run_draft_plan), when the scheduler has one.
  result<step_outcome> step(const executor_fn& execute, const executor_fn& draft_execute = {});

  // The halves of a step, for a caller that looks between them (tests).
  /// schedule() and the grant: the plan to execute (empty when nothing runs).
  result<step_plan> plan();
  result<std::vector<seq_event>> apply(const step_result& result) { return sched_.apply(result); }
  /// The pending request or step failed: its sequences finish with `cause`.
  std::vector<seq_event> fail_step(const error& cause) { return sched_.fail_step(cause); }

  scheduler& sched() { return sched_; }
  const scheduler& sched() const { return sched_; }
  /// The loop's own KV manager (step(); not the phases' caller's).
  const kv_manager& kv() const { return *kv_; }
  /// Its prefix cache's change since the last call (what an engine reports to routers).
  cache_delta take_cache_delta() { return kv_ ? kv_->take_cache_delta() : cache_delta{}; }
  const step_totals& totals() const { return totals_; }
  const step_loop_options& options() const { return options_; }
  /// The kv request of the last step.
  const kv_request& last_request() const { return last_request_; }

 private:
  /// The live sequences: running, then waiting.
  std::vector<seq_id> live_ids() const;
  std::vector<seq_event> expire();
  std::vector<seq_event> failed(const error& cause);
  /// Every event leaving the loop passes here: a request that finished before it ran
  /// leaves the admission gate.
  void settle(const std::vector<seq_event>& events);
  void settle(const seq_event& event);
  void leave_gate(seq_id id);

  scheduler sched_;
  std::optional<kv_manager> kv_;
  step_loop_options options_;
  bool is_accepting_ = true;
  step_totals totals_;
  error last_failure_;  ///< the cause of the last failed step
  kv_request last_request_;
  /// Requests inside the admission gate (not started yet): their prompt tokens.
  std::unordered_map<seq_id, int> not_started_;
};

}  // namespace inflight
