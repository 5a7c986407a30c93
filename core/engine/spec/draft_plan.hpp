#pragma once
/// The `draft` drafter's work in a step: a smaller model of the target's vocabulary
/// drafts greedily for several sequences at once, in the KV owner's draft space. The
/// scheduler plans it (scheduler::on_grant -> draft_plan), the executor runs it before the
/// step that checks the drafts (run_draft_plan, on whatever backend holds the draft
/// model), and the scheduler puts the drafted tokens into that step (scheduler::on_drafts).

#include <cstdint>
#include <functional>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/engine/step/step_plan.hpp"

namespace inflight {

/// One sequence's draft: the tokens its draft cache lacks (from `start_position` to the
/// sequence's end: the prompt, the tokens kept since its last draft, never fewer than
/// its last token), then `num_draft` greedy tokens, one step each.
struct draft_seq {
  seq_id id = 0;
  std::vector<token_id> tokens;
  int start_position = 0;
  /// In the draft space; covers [0, start_position + tokens.size() + num_draft - 1): the
  /// last drafted token is never fed.
  std::vector<block_id> block_table;
  int num_draft = 0;
};

struct draft_plan {
  std::vector<draft_seq> seqs;
};

struct draft_result {
  /// Per draft_seq, in order: its drafted tokens (num_draft of them).
  std::vector<std::vector<token_id>> tokens;
  double seconds = 0.0;  ///< the draft model's time on the whole plan
};

/// Runs `plan` on a backend: the sequences catch up and draft their first token in one
/// ragged step, then every sequence that drafts more takes one row of each further step.
/// `execute` runs one step of the draft model (a backend's); the draft model's sampling
/// is greedy. An error of any step is the whole plan's: no draft is half used.
result<draft_result> run_draft_plan(const draft_plan& plan,
                                    const std::function<result<step_result>(const step_plan&)>& execute);

}  // namespace inflight
