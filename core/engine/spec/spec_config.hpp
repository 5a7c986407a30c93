#pragma once
/// Speculative decoding settings: the deployment's ([speculative] in the TOML) and a
/// request's own choice, which the scheduler resolves into each sequence's spec_state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/spec/ngram_drafter.hpp"

namespace inflight {

/// Every name the deployment's method and a request's `speculative` field take ("off":
/// none; "draft" needs a draft model).
inline const std::vector<std::string>& speculative_methods() {
  static const std::vector<std::string> names = {"off", "ngram", "suffix", "draft"};
  return names;
}

/// A built-in method, or a name a drafter plugin may have (letters, digits, '_', '-':
/// the engine says whether one is there).
bool is_speculative_method_name(std::string_view name);

struct speculative_config {
  /// The drafter of requests that choose none: "ngram", "suffix", or empty (off).
  std::string method;
  /// The longest draft checked in one step (vLLM's num_speculative_tokens).
  int num_speculative_tokens = 4;
  ngram_settings ngram;
  /// One more row's cost relative to a step's fixed cost (reading the weights). A drafted
  /// row is added only when the chance that it is kept beats what it costs the whole step
  /// (the budget rule: see scheduler_spec.cpp); large batches draft nothing. The first
  /// estimate: with learn_row_cost the steps' own times replace it (step_cost.hpp).
  double row_cost = 0.25;
  bool learn_row_cost = true;
  /// The `draft` drafter: the longest sequence its draft model takes (0: there is none).
  /// Its K/V lie in the KV owner's draft space (kv_request::draft); the executor runs it.
  int draft_model_context = 0;
};

/// A request's choice (the `speculative` request field): a drafter by name ("off": none)
/// and a draft length; unset fields are the deployment's.
struct speculation_choice {
  std::optional<std::string> method;
  std::optional<int> num_tokens;
};

/// One sequence's speculation: its drafter, its draft length, its acceptance.
struct spec_state {
  std::string method;               ///< empty: it never drafts
  int max_draft = 0;                ///< the longest draft for it
  /// The chance that a drafted token is kept given that the ones before it were: an
  /// average over its recent checks, starting hopeful so that drafting starts.
  double acceptance = 0.7;
  /// Moves the acceptance estimate `weight` of the way towards `target` (1: a drafted
  /// token kept, 0: refuted, the first estimate: while it does not draft).
  void estimate_towards(double target, double weight) { acceptance += weight * (target - acceptance); }
  std::vector<token_id> draft;      ///< drafted for the step being planned
  /// The draft model's tokens asked for the step being planned (the `draft` drafter:
  /// they are known once the executor ran it, scheduler::on_drafts).
  int model_draft = 0;
  /// Its cache in the draft model's KV space: blocks its table holds (0: none), the
  /// leading tokens whose K/V are in it, and when it last drafted (LRU eviction).
  int draft_blocks = 0;
  int draft_computed = 0;
  std::uint64_t draft_used = 0;
  int num_drafted = 0;              ///< drafted tokens checked in all
  int num_accepted = 0;             ///< of them, kept
};

}  // namespace inflight
