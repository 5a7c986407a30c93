// orca: Orca's iteration-level scheduling with selective batching (Yu et al., OSDI
// 2022). Every step decodes every running sequence, and whole prompts (never chunked)
// join the same step, first come first served: a waiting request is admitted when its
// whole prompt fits in the token budget left after the decodes, a seat is free and its
// KV blocks are available; admission stops at the first request that does not fit.
// Like Orca's scheduler, admission reserves the KV blocks a request can ever need
// (prompt + max_tokens), so a running sequence never lacks a block and nobody is
// preempted; the price is memory held for tokens a request may never generate.
//
// Orca has no token budget; inflight's max_num_batched_tokens bounds every step, so a
// prompt longer than that budget could never join whole: once at the head of the
// queue it is admitted with the budget left after the decodes, and its prefill goes
// on, chunk by chunk, beside the decodes of the next steps (no other admission meanwhile).
//
// Settings:
//   reserve_max_tokens  true (default): reserve prompt + max_tokens blocks at admission;
//                       false: only the prompt's blocks (paged, like vLLM; decodes
//                       short of blocks then preempt the latest admitted)

#include <string>

#include "whole_prompts.hpp"

namespace {

using namespace inflight::policies;

struct orca_state {
  bool is_reserving = true;
};

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  orca_state state;
  for (std::size_t i = 0; i < num_settings; ++i) {
    std::string key = settings[i].key != nullptr ? settings[i].key : "";
    if (key != "reserve_max_tokens")
      return fail(error, capacity, "orca: unknown setting '" + key + "' (known: reserve_max_tokens)");
    if (!parse_bool(settings[i].value, state.is_reserving))
      return fail(error, capacity, "orca: reserve_max_tokens must be true or false");
  }
  *out_state = new orca_state(state);
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<orca_state*>(state); }

inflight_policy_status decide(void* state, const inflight_sched_view* view, inflight_decision* decision) {
  const auto* s = static_cast<const orca_state*>(state);
  decision_builder out(view, decision);
  auto running = by_arrival(view->running, view->num_running);
  for (const auto* seq : running)
    if (seq->num_tokens_needed == 1) out.add_running(*seq);
  // an over-long prompt in flight takes what the decodes leave; nobody joins meanwhile
  if (auto partial = partial_prefills(view); !partial.empty()) {
    for (const auto* seq : partial) out.add_running(*seq);
    return INFLIGHT_POLICY_OK;
  }
  const int budget = view->budget.max_num_batched_tokens;
  whole_prompt_limits limits{out.budget_left(), budget, s->is_reserving};
  admit(out, plan_whole_admissions(view, out, limits));
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "orca", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
