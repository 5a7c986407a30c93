#pragma once
/// The scheduler mechanism: queues, token budget and the validation of the policy's
/// decisions. It owns no KV blocks: kv_manager does (in the engine, inside the
/// kv-allocator actor). One step is four calls, as in a serving loop:
///
///   auto ask   = sched.schedule();         // ask the policy, validate: one kv_request
///   auto grant = kv.try_grant(*ask);       // elsewhere: the kv-allocator
///   auto plan  = sched.on_grant(*grant);   // block tables in, preemptions applied
///   auto out   = backend.execute(*plan);   // elsewhere: the executor
///   auto ev    = sched.apply(*out);        // advance, append tokens, finish
///
/// The policy sees the KV snapshot of the last grant (plus the blocks released since);
/// the grant is the authority. Preemption is by recompute: a victim loses its blocks,
/// goes to the front of the waiting queue with its generated tokens kept and
/// num_computed_tokens = 0; it is re-prefilled later (prompt + generated) and decoding
/// continues without re-sampling.
///
/// Constrained decoding: a sequence with params.grammar owns a grammar_matcher. Building
/// a plan fills each sampled sequence's allowed-token mask onto its seq_step (the
/// executor only applies it); applying the result feeds the sampled token to the
/// matcher, and a sequence whose grammar is complete finishes with reason stop.
/// A reasoning phase (params.reasoning) comes before the grammar: its tokens are not fed
/// to the matcher, and a spent budget allows only the end of the reasoning next.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/engine/kv/kv_grant.hpp"
#include "core/engine/sched/policy.hpp"
#include "core/engine/sched/scheduler_config.hpp"
#include "core/engine/sched/sequence.hpp"
#include "core/engine/spec/draft_plan.hpp"
#include "core/engine/spec/drafter.hpp"
#include "core/engine/spec/step_cost.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {

/// Something a caller routes to the request that owns `id`.
struct seq_event {
  enum class kind { token, finished };
  seq_id id = 0;
  kind type = kind::token;
  sampled_token token;          ///< kind::token: the new token (stop tokens included)
  /// kind::token: the token is a stop token (is_stop_token, the one rule): it ends the
  /// sequence and its text is never shown.
  bool is_stop_token = false;
  finish_reason reason = finish_reason::stop;  ///< kind::finished
  std::optional<error> cause;   ///< kind::finished: why, for error / aborted (mapped at the edge)
  int num_generated_tokens = 0; ///< after this event
  int num_cached_tokens = 0;    ///< kind::finished: prompt tokens taken from the prefix cache
  /// kind::finished: speculative decoding's drafted tokens checked, and those kept.
  int num_draft_tokens = 0;
  int num_accepted_tokens = 0;
  std::vector<float> row_logits{};  ///< kind::finished of a prefill-only sequence: its score rows' logits
  /// kind::finished of an embedding sequence: its pooled final hidden state (not
  /// normalised; mean pooling already divided by the prompt length).
  std::vector<float> embedding{};
  /// The sequence's times on the scheduler's clock after this event (a token event: its
  /// last_token is this token's time; a finished event: finished is set). Request timings
  /// (TTFT, TPOT, queue time, E2E) come from these.
  seq_timestamps times{};
};

struct scheduler_counters {
  std::uint64_t num_steps = 0;
  std::uint64_t num_submitted = 0;
  std::uint64_t num_finished = 0;
  std::uint64_t num_preemptions = 0;
  /// Entries of policy decisions that were clipped or refused (each entry counts once).
  std::uint64_t num_rejected_decisions = 0;
  /// Prefix cache, in tokens, at each request's first admission (vLLM's counters):
  /// tokens looked up, and tokens found cached.
  std::uint64_t num_prefix_cache_queries = 0;
  std::uint64_t num_prefix_cache_hits = 0;
  /// Sampled sequence-steps under a grammar (each filled one allowed-token mask).
  std::uint64_t num_constrained_steps = 0;
  /// Requests the policy shed (finished unserved: they could not meet their targets).
  std::uint64_t num_shed = 0;
  /// Sequence-steps that waited because the step had max_loras_per_step adapters already.
  std::uint64_t num_lora_waits = 0;
  /// Speculative decoding: drafted tokens checked, those kept, and the sequence-steps
  /// that checked a draft (vLLM's spec_decode_num_draft_tokens / _accepted_tokens / _drafts).
  std::uint64_t num_draft_tokens = 0;
  std::uint64_t num_accepted_tokens = 0;
  std::uint64_t num_drafts = 0;
};

class scheduler {
 public:
  /// Seconds on a monotonic clock; injectable for tests.
  using clock_fn = std::function<double()>;

  /// `kv` is the KV manager's snapshot before the first step (its size bounds the
  /// context).
  static result<scheduler> try_create(const scheduler_config& config, const kv_snapshot& kv,
                                      policy pol, clock_fn clock = {});

  /// Queues a request. Refuses a duplicate live id, an empty prompt, max_tokens < 1 and
  /// a prompt longer than the context.
  result<void> submit(seq_request request);
  /// Ends a live sequence for any reason; its blocks go back with the next kv request.
  result<seq_event> finish(seq_id id, finish_reason reason, std::optional<error> cause = {});
  result<seq_event> cancel(seq_id id) { return finish(id, finish_reason::cancelled); }

  /// Plans the next step: the policy's decision, validated, as the step's one kv
  /// request (with the releases since the last one). Refused while a request or a step
  /// is pending. Call it when has_work() or has_pending_releases(). Sequences the policy
  /// shed finish here: take their events with take_shed_events().
  result<kv_request> schedule();
  /// The finished events (reason error, cause errc::queue_timeout, message starting
  /// with shed_message) of the sequences the
  /// last schedule() shed; the caller routes them like any finish.
  std::vector<seq_event> take_shed_events() { return std::exchange(shed_events_, {}); }
  /// The KV manager's answer to the pending request: the step plan (empty when
  /// nothing runs). Victims it preempted go back to the waiting queue.
  result<step_plan> on_grant(kv_grant grant);
  /// The draft model's work that the plan on_grant() just gave waits for (the `draft`
  /// drafter: speculative.draft_model_context > 0), once; none when no sequence of the
  /// step drafts with it. Run it (run_draft_plan) and hand the result to on_drafts()
  /// before the plan is executed.
  std::optional<draft_plan> take_draft_plan();
  /// Puts the draft model's tokens into `plan` (the one on_grant() gave): each sequence's
  /// draft as far as its grant, a stop token and its grammar go. A failed draft run
  /// leaves the plan as it is: the step checks no draft from the model.
  void on_drafts(step_plan& plan, result<draft_result> drafts);
  /// Applies the executor's result for the pending plan.
  result<std::vector<seq_event>> apply(const step_result& result);
  /// The pending request or step failed: its sequences finish with reason error and `cause`.
  std::vector<seq_event> fail_step(const error& cause);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  /// Finished or preempted sequences whose blocks the next kv request returns.
  bool has_pending_releases() const { return !releases_.empty() || !draft_releases_.empty(); }
  /// A kv request or a step plan is out and not answered yet.
  bool has_pending_step() const { return phase_ != step_phase::idle; }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  /// The KV manager's state after the last grant.
  const kv_snapshot& kv() const { return kv_; }
  double kv_usage() const { return kv_.usage(); }
  /// Longest sequence (prompt + generated) the engine lets grow.
  int max_context() const { return max_context_; }
  const scheduler_counters& counters() const { return counters_; }
  std::uint64_t num_preemptions() const { return counters_.num_preemptions; }
  std::uint64_t num_rejected_decisions() const { return counters_.num_rejected_decisions; }
  /// Why the last decision entry was clipped or refused; empty when none was.
  const std::string& last_rejection() const { return last_rejection_; }
  const scheduler_config& config() const { return config_; }
  /// Speculative decoding's step cost now: learned from the steps' times when
  /// speculative.learn_row_cost and they varied enough in rows, else the configured
  /// row_cost for every kind of row (in units of a step's fixed cost).
  step_cost step_costs() const;
  /// Whether step_costs() is learned (then in seconds, and a drafter's own time counts).
  bool learns_step_cost() const;
  const std::string& policy_name() const { return policy_.name(); }
  /// Seconds on the scheduler's clock (the injected one).
  double now() const { return clock_(); }
  /// A live (not finished) sequence, or nullptr.
  const sequence* find(seq_id id) const;
  const std::vector<seq_id>& running() const { return running_; }
  const std::deque<seq_id>& waiting() const { return waiting_; }
  /// Called with the reason of every clipped or refused decision entry (logging).
  void set_rejection_logger(std::function<void(const std::string&)> logger) {
    rejection_logger_ = std::move(logger);
  }
  /// Called with the seconds each grammar mask took to fill (one per constrained
  /// sequence-step, while the plan is built): the metrics' histogram.
  void set_mask_observer(std::function<void(double)> observer) { mask_observer_ = std::move(observer); }
  /// Makes a drafter known by `name` (replacing one of that name) for the requests
  /// (and the deployment) that choose it: the built-in ones are made on first use.
  void add_drafter(std::string name, std::unique_ptr<drafter> d) { drafters_[std::move(name)] = std::move(d); }
  /// Called with (drafted, kept) for every checked draft: the acceptance histogram.
  void set_draft_observer(std::function<void(int, int)> observer) { draft_observer_ = std::move(observer); }

 private:
  enum class step_phase { idle, awaiting_grant, awaiting_result };
  struct pending_entry {
    seq_id id = 0;
    int num_tokens = 0;
    bool do_sample = false;
    bool has_rows = false;  ///< the step returns its score rows (its prompt ends here)
    bool has_hidden = false;  ///< the step returns a hidden output (embeddings)
    bool is_prefill_end = false;  ///< a prefill-only sequence whose prompt ends in this step
    std::vector<token_id> draft;  ///< the drafted tokens it checks (the last of its num_tokens)
  };
  struct pending_step {
    std::uint64_t step_id = 0;
    std::vector<pending_entry> entries;
  };
  /// Working state while one decision is validated against the policy's view.
  struct validation {
    int budget_left = 0;
    int num_free_blocks = 0;  // the view's free blocks, less what earlier entries need
    std::unordered_set<seq_id> asked;
    std::unordered_set<seq_id> policy_preempted;
    int num_admitted = 0;
    std::vector<kv_ask> asks;
    std::vector<const lora_adapter*> adapters;  // of the asks so far, each once
    int num_free_draft_blocks = 0;  // the draft space's, less what earlier drafts need
    std::vector<kv_ask> draft_asks;
  };
  /// A sequence of the planned step whose draft the draft model writes.
  struct model_draft_slot {
    std::size_t entry = 0;  ///< its index in the plan and in pending_step::entries
    draft_seq work;
  };

  scheduler(const scheduler_config& config, const kv_snapshot& kv, policy pol, clock_fn clock);

  // scheduler_decision.cpp: view, validation, preemption
  void build_view(std::uint64_t step_id);
  validation decide_and_validate(std::uint64_t step_id);
  void apply_policy_preemptions(const inflight_decision& decision, validation& v);
  void apply_policy_sheds(const inflight_decision& decision, validation& v);
  void validate_entry(const inflight_schedule_entry& entry, validation& v);
  int fit_admission(const sequence& seq, int num_tokens, validation& v);
  std::vector<kv_release> victim_order() const;
  std::optional<kv_ask> fallback_ask() const;
  kv_ask make_ask(const sequence& seq, int num_tokens) const;
  void reject(std::string reason);
  void preempt(sequence& seq);

  // scheduler_spec.cpp: speculative decoding
  result<void> resolve_speculation(sequence& seq, const speculation_choice& choice);
  void add_drafts(validation& v);
  /// A step's rows by kind, as step_cost prices them.
  struct step_rows {
    int prompt = 0, decode = 0, draft = 0;
  };
  /// How many tokens the budget rule lets `seq` draft in a step of `rows`.
  int fit_draft(const sequence& seq, int max_draft, const step_rows& rows) const;
  bool can_draft(const sequence& seq) const;
  /// Asks the draft space for `seq`'s cache to take k more draft tokens, evicting the
  /// caches used least recently by sequences not drafting this step; false when it cannot.
  bool ask_draft_space(sequence& seq, int k, validation& v);
  /// Its draft cache goes back to the draft space (with the next request).
  void release_draft_cache(sequence& seq);
  /// The draft space's answer: the losses taken, the tables granted (by sequence).
  std::unordered_map<seq_id, kv_granted> take_draft_grants(const kv_grant& grant);
  /// The draft model's work for `seq` in the plan being built (its step: plan entry `entry`).
  void plan_model_draft(sequence& seq, const seq_step& step, std::size_t entry, int num_granted_draft,
                        const std::unordered_map<seq_id, kv_granted>& draft_tables);
  /// The step being scheduled starts its time (on the machine's clock); the step before
  /// it, which ends there, teaches the step cost.
  void start_step_time();
  /// Seconds on the machine's monotonic clock (what the budget rule's costs are in; the
  /// scheduler's own clock may be a simulation's or a test's).
  static double seconds_now();
  /// The pending step's rows, for the step cost the budget rule learns when it ends.
  void measure_step(double backend_seconds);
  void fill_draft_masks(sequence& seq, seq_step& step);
  void take_tokens(sequence& seq, const pending_entry& e, std::span<const sampled_token> tokens,
                   std::vector<seq_event>& events);
  void learn_finished(sequence& seq, finish_reason reason);

  // scheduler.cpp: plan, apply, finish
  seq_step make_seq_step(sequence& seq, int num_tokens, std::vector<block_id> block_table);
  /// The index of `adapter` in plan.adapters (added when new).
  static int adapter_index(step_plan& plan, const std::shared_ptr<const lora_adapter>& adapter);
  void fill_token_mask(sequence& seq, seq_step& step);
  bool take_reasoning_token(sequence& seq, token_id token) const;
  void admit(sequence& seq, int num_computed_tokens);
  void queue_release(sequence& seq, bool is_finished);
  void hash_full_blocks(sequence& seq);
  void take_cached_prefixes(const std::vector<kv_cached_prefix>& prefixes);
  bool append_token(sequence& seq, const sampled_token& token, std::vector<seq_event>& events);
  result<void> check_result(const step_result& result) const;
  void pool_hidden(sequence& seq, const seq_hidden& hidden) const;
  seq_event finish_prefill_only(sequence& seq, const seq_row_logits* rows);
  seq_event finish_sequence(sequence& seq, finish_reason reason, std::optional<error> cause);
  std::optional<finish_reason> check_stop(const sequence& seq, bool ends_on_stop_token) const;

  scheduler_config config_;
  kv_snapshot kv_;
  policy policy_;
  clock_fn clock_;
  int max_context_ = 0;
  std::unordered_map<seq_id, sequence> seqs_;  // live sequences only
  std::vector<seq_id> running_;                // admission order
  std::deque<seq_id> waiting_;                 // preempted at the front, then arrivals
  step_phase phase_ = step_phase::idle;
  std::vector<kv_ask> asked_;                  // awaiting_grant: the asks sent, in order
  std::optional<kv_ask> fallback_;
  std::vector<kv_block_hashes> new_hashes_;    // not sent yet
  std::vector<kv_release> releases_;           // not sent yet
  std::vector<kv_release> releases_in_flight_; // sent with the pending request
  std::vector<kv_release> draft_releases_;     // the draft space's, not sent yet
  std::vector<kv_release> draft_releases_in_flight_;
  int num_released_draft_blocks_ = 0;          // held by draft_releases_
  std::vector<kv_ask> draft_asked_;            // awaiting_grant: the draft asks sent
  std::vector<model_draft_slot> model_drafts_; // the planned step's, until on_drafts()
  std::uint64_t draft_clock_ = 0;              // orders the draft caches' last use
  int num_released_blocks_ = 0;                // blocks held by releases_ (the view counts them free)
  std::optional<pending_step> pending_;
  std::uint64_t next_step_id_ = 1;
  scheduler_counters counters_;
  std::string last_rejection_;
  std::function<void(const std::string&)> rejection_logger_;
  std::function<void(double)> mask_observer_;
  std::function<void(int, int)> draft_observer_;
  /// Speculative decoding's drafters by name, made when a sequence first asks for one.
  std::unordered_map<std::string, std::unique_ptr<drafter>> drafters_;
  step_cost_fit step_cost_fit_;  ///< the steps' rows and times
  /// The step the budget rule learns from: its rows, and its time from its scheduling to
  /// the next one (the engine's whole work on it), less the drafters' proposals.
  struct measured_step {
    int prompt_rows = 0, decode_rows = 0, draft_rows = 0;
    double backend_seconds = 0.0;
    double started_at = 0.0, propose_seconds = 0.0;
    double applied_at = 0.0;
    bool continues = false;  ///< work was left when it was applied: the next step follows at once
  };
  double step_started_at_ = 0.0, step_propose_seconds_ = 0.0;  ///< of the step being scheduled
  std::optional<measured_step> measured_;
  /// Per drafter: seconds its proposals take per drafted token (a recent average).
  std::unordered_map<std::string, double> draft_seconds_;
  // Scratch buffers handed to the policy; reused across steps.
  std::vector<inflight_seq_info> view_running_;
  std::vector<inflight_seq_info> view_waiting_;
  std::vector<inflight_schedule_entry> decision_entries_;
  std::vector<std::uint64_t> decision_preempt_;
  std::vector<std::uint64_t> decision_shed_;
  std::vector<seq_event> shed_events_;         // of the last schedule(), not taken yet
  inflight_sched_view view_{};
};

}  // namespace inflight
