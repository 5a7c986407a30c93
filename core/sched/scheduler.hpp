#pragma once
/// The scheduler mechanism: queues, token budget, KV blocks and the validation of the
/// policy's decisions. One step is three calls, as in a serving loop:
///
///   auto plan = sched.schedule();          // ask the policy, validate, reserve blocks
///   auto out  = backend.execute(*plan);    // elsewhere: the executor
///   auto ev   = sched.apply(*out);         // advance, append tokens, finish, free blocks
///
/// Preemption is by recompute: a victim loses its blocks, goes to the front of the
/// waiting queue with its generated tokens kept and num_computed_tokens = 0; it is
/// re-prefilled later (prompt + generated) and decoding continues without re-sampling.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/kv/block_pool.hpp"
#include "core/sched/policy.hpp"
#include "core/sched/scheduler_config.hpp"
#include "core/sched/sequence.hpp"
#include "core/sched/step_plan.hpp"

namespace inflight {

/// Something a caller routes to the request that owns `id`.
struct seq_event {
  enum class kind { token, finished };
  seq_id id = 0;
  kind type = kind::token;
  sampled_token token;          ///< kind::token: the new token (stop tokens included)
  finish_reason reason = finish_reason::stop;  ///< kind::finished
  std::string message;          ///< kind::finished: why, for error / aborted
  int num_generated_tokens = 0; ///< after this event
};

struct scheduler_counters {
  std::uint64_t num_steps = 0;
  std::uint64_t num_submitted = 0;
  std::uint64_t num_finished = 0;
  std::uint64_t num_preemptions = 0;
  /// Entries of policy decisions that were clipped or refused (each entry counts once).
  std::uint64_t num_rejected_decisions = 0;
};

class scheduler {
 public:
  /// Seconds on a monotonic clock; injectable for tests.
  using clock_fn = std::function<double()>;

  static result<scheduler> try_create(const scheduler_config& config, block_pool pool,
                                      policy pol, clock_fn clock = {});

  /// Queues a request. Refuses a duplicate live id, an empty prompt, max_tokens < 1 and
  /// a prompt longer than the context.
  result<void> submit(seq_request request);
  /// Ends a live sequence for any reason and frees its blocks (stop strings, deadlines).
  result<seq_event> finish(seq_id id, finish_reason reason, std::string message = {});
  result<seq_event> cancel(seq_id id) { return finish(id, finish_reason::cancelled); }

  /// Plans the next step. An empty plan means nothing could run. Refused while a
  /// previous plan has not been applied.
  result<step_plan> schedule();
  /// Applies the executor's result for the pending plan.
  result<std::vector<seq_event>> apply(const step_result& result);
  /// The pending step failed in the backend: its sequences finish with reason error.
  std::vector<seq_event> fail_step(const std::string& message);

  /// The releases and reservations since the last call (the step just planned
  /// included), for the kv-allocator to replay.
  kv_ops take_kv_log() { return std::exchange(kv_log_, {}); }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  bool has_pending_step() const { return pending_.has_value(); }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  double kv_usage() const { return pool_.usage(); }
  int num_free_blocks() const { return pool_.num_free_blocks(); }
  /// Longest sequence (prompt + generated) the engine lets grow.
  int max_context() const { return max_context_; }
  const scheduler_counters& counters() const { return counters_; }
  std::uint64_t num_preemptions() const { return counters_.num_preemptions; }
  std::uint64_t num_rejected_decisions() const { return counters_.num_rejected_decisions; }
  /// Why the last decision entry was clipped or refused; empty when none was.
  const std::string& last_rejection() const { return last_rejection_; }
  const block_pool& pool() const { return pool_; }
  const scheduler_config& config() const { return config_; }
  const std::string& policy_name() const { return policy_.name(); }
  /// A live (not finished) sequence, or nullptr.
  const sequence* find(seq_id id) const;
  const std::vector<seq_id>& running() const { return running_; }
  const std::deque<seq_id>& waiting() const { return waiting_; }
  /// Called with the reason of every clipped or refused decision entry (logging).
  void set_rejection_logger(std::function<void(const std::string&)> logger) {
    rejection_logger_ = std::move(logger);
  }

 private:
  struct grant {
    seq_id id = 0;
    int num_tokens = 0;
  };
  struct pending_entry {
    seq_id id = 0;
    int num_tokens = 0;
    bool do_sample = false;
  };
  struct pending_step {
    std::uint64_t step_id = 0;
    std::vector<pending_entry> entries;
  };
  /// Working state while one decision is validated.
  struct validation {
    int budget_left = 0;
    int num_reserved_blocks = 0;  // new blocks promised to earlier grants
    std::unordered_set<seq_id> granted;
    std::unordered_set<seq_id> policy_preempted;
    std::unordered_set<seq_id> engine_preempted;
    int num_admitted = 0;
    std::vector<grant> grants;
  };

  scheduler(const scheduler_config& config, block_pool pool, policy pol, clock_fn clock);

  // scheduler_decision.cpp: view, validation, preemption
  void build_view(std::uint64_t step_id);
  std::vector<grant> decide_and_validate(std::uint64_t step_id);
  void apply_policy_preemptions(const inflight_decision& decision, validation& v);
  void validate_entry(const inflight_schedule_entry& entry, validation& v);
  int fit_blocks(sequence& seq, int num_tokens, bool is_admission, validation& v);
  std::optional<seq_id> pick_victim(seq_id requester, const validation& v) const;
  void ensure_progress(validation& v);
  void reject(std::string reason);
  void preempt(sequence& seq);

  // scheduler.cpp: plan, apply, finish
  seq_step make_seq_step(sequence& seq, int num_tokens);
  void admit(sequence& seq);
  bool append_token(sequence& seq, const sampled_token& token, std::vector<seq_event>& events);
  seq_event finish_sequence(sequence& seq, finish_reason reason, std::string message);
  std::optional<finish_reason> check_stop(const sequence& seq, token_id token) const;
  double now() const { return clock_(); }

  scheduler_config config_;
  block_pool pool_;
  policy policy_;
  clock_fn clock_;
  int max_context_ = 0;
  std::unordered_map<seq_id, sequence> seqs_;  // live sequences only
  std::vector<seq_id> running_;                // admission order
  std::deque<seq_id> waiting_;                 // preempted at the front, then arrivals
  std::optional<pending_step> pending_;
  std::uint64_t next_step_id_ = 1;
  scheduler_counters counters_;
  std::string last_rejection_;
  kv_ops kv_log_;
  std::function<void(const std::string&)> rejection_logger_;
  // Scratch buffers handed to the policy; reused across steps.
  std::vector<inflight_seq_info> view_running_;
  std::vector<inflight_seq_info> view_waiting_;
  std::vector<inflight_schedule_entry> decision_entries_;
  std::vector<std::uint64_t> decision_preempt_;
  inflight_sched_view view_{};
};

}  // namespace inflight
