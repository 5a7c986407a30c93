#pragma once
/// A compact summary of what the engine did in one step (who ran, prompt-chunk and
/// decode tokens, budget, KV usage, queue lengths), for live views such as
/// GET /v1/engine/events and the web UI; and its aggregation over consecutive steps,
/// so that a reader who falls behind gets fewer, coarser summaries from a buffer of
/// bounded size instead of an unbounded backlog.
///
///   steps:    [s1][s2][s3][s4][s5][s6][s7][s8]       a queue of capacity 8 is full
///   push s9:  [s1+s2][s3+s4][s5+s6][s7+s8][s9]       adjacent pairs merge, then s9
///
/// Nothing is lost in a merge but detail: token counts add up, every sequence that ran
/// keeps its totals (up to max_seqs entries; the rest only count), joins, finishes and
/// preemptions stay listed (up to max_seqs ids each).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/engine/sched/sequence.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {

/// One sequence's part of a step (or, aggregated, of consecutive steps).
struct step_seq {
  seq_id id = 0;
  int num_prefill_tokens = 0;  ///< prompt tokens (or a recompute after preemption) processed: a chunk
  int num_decode_tokens = 0;   ///< tokens decoded (1 per step)
  int position = 0;            ///< tokens already in the KV cache when it first ran in the window
  int num_draft_tokens = 0;    ///< speculative decoding: drafted tokens checked with its decodes
  std::string adapter;         ///< the LoRA adapter it runs with ("": the base model)
};

struct step_finish {
  seq_id id = 0;
  finish_reason reason = finish_reason::stop;
};

/// One step, or a window of consecutive steps merged by merge_summary().
struct step_summary {
  std::uint64_t first_step_id = 0;
  std::uint64_t last_step_id = 0;
  int num_steps = 1;
  double start_s = 0.0;          ///< engine clock (seconds) when the first step was planned
  double end_s = 0.0;            ///< ... and when the last step's result was applied
  double busy_s = 0.0;           ///< sum of the steps' durations (plan -> applied)
  int token_budget = 0;          ///< max_num_batched_tokens
  int num_prefill_tokens = 0;    ///< over all steps of the window
  int num_decode_tokens = 0;
  int num_draft_tokens = 0;      ///< speculative decoding: drafted rows checked ...
  int num_accepted_tokens = 0;   ///< ... and, of them, kept
  int max_step_tokens = 0;       ///< the fullest step's tokens (budget fill)
  int max_step_seqs = 0;         ///< the largest batch
  int num_fused_steps = 0;       ///< steps that ran a prompt chunk together with decodes
  std::vector<step_seq> seqs;    ///< in order of first appearance, at most max_seqs
  int num_seqs_dropped = 0;      ///< sequences past max_seqs (their tokens are in the sums)
  std::vector<seq_id> joined;    ///< scheduled for the first time
  std::vector<step_finish> finished;  ///< left the engine (finished, cancelled, failed)
  std::vector<seq_id> preempted; ///< lost their KV blocks (recompute later)
  int num_joined = 0;            ///< counts, also past the caps of the lists above
  int num_finished = 0;
  int num_preemptions = 0;
  double kv_usage = 0.0;         ///< 0..1, after the last step
  double max_kv_usage = 0.0;
  int num_waiting = 0;           ///< after the last step
  int num_running = 0;
  /// The engine that ran these steps: its address behind a router ("host:port"), empty
  /// in one process. Steps of different engines are never merged.
  std::string engine;

  /// Rows run: prompt chunks, decodes and drafted tokens (all charged to the budget).
  int num_tokens() const { return num_prefill_tokens + num_decode_tokens + num_draft_tokens; }
};

/// The per-sequence part of a step from its plan: a single token past the prompt is a
/// decode; anything else (a prompt chunk, a recompute) is prefill.
step_summary summarize_plan(const step_plan& plan, int token_budget);

/// Appends `later` (the steps right after `into`) to `into`. Lists keep at most
/// `max_seqs` entries; counts and token sums stay exact.
void merge_summary(step_summary& into, const step_summary& later, std::size_t max_seqs);

/// A reader's buffer of step summaries, bounded in entries (and, through max_seqs, in
/// the size of each): full, it merges adjacent pairs, halving its time resolution,
/// before taking the new one. Not thread-safe: its owner locks.
class step_queue {
 public:
  /// capacity >= 2 entries; max_seqs >= 1 sequences per entry.
  step_queue(std::size_t capacity, std::size_t max_seqs);

  void push(step_summary s);
  /// Everything queued, oldest first; the queue is empty afterwards.
  std::vector<step_summary> take();
  std::size_t size() const { return entries_.size(); }
  bool is_empty() const { return entries_.empty(); }
  std::size_t capacity() const { return capacity_; }
  /// Times the queue was full and merged its entries.
  std::uint64_t num_compactions() const { return num_compactions_; }

 private:
  void compact();

  std::size_t capacity_;
  std::size_t max_seqs_;
  std::deque<step_summary> entries_;
  std::uint64_t num_compactions_ = 0;
};

}  // namespace inflight
