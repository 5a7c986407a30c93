// prefill_first: vLLM's original default scheduler (v0, before chunked prefill). A step
// is either prompts only or decodes only. Whenever the oldest waiting request fits (a
// seat, the blocks of its whole prompt, the token budget), the step prefills whole
// prompts in queue order (preempted requests first, then arrivals) until the next one
// does not fit; otherwise it decodes every running sequence. A decode short of KV
// blocks preempts the latest admitted sequence (the engine's own mechanism, as vLLM
// did), which later recomputes its prompt and generated tokens as a prompt.
//
// vLLM refused a prompt longer than max_num_batched_tokens; inflight accepts it, so
// such a prompt, once at the head of the queue, is prefilled alone in chunks of the
// budget over consecutive prompt-only steps.

#include <string>

#include "whole_prompts.hpp"

namespace {

using namespace inflight::policies;

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  if (num_settings > 0)
    return fail(error, capacity, std::string("prefill_first takes no settings, got '") + settings[0].key + "'");
  *out_state = nullptr;
  return INFLIGHT_POLICY_OK;
}

void destroy(void*) {}

inflight_policy_status decide(void*, const inflight_sched_view* view, inflight_decision* decision) {
  decision_builder out(view, decision);
  const int budget = view->budget.max_num_batched_tokens;
  // an over-long prompt in flight: its prefill goes on, still a prompt-only step
  if (auto partial = partial_prefills(view); !partial.empty()) {
    for (const auto* seq : partial) out.add_running(*seq);
    return INFLIGHT_POLICY_OK;
  }
  whole_prompt_limits limits{budget, budget, false};
  if (admit(out, plan_whole_admissions(view, out, limits)) > 0) return INFLIGHT_POLICY_OK;
  for (const auto* seq : by_arrival(view->running, view->num_running)) out.add_running(*seq);
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "prefill_first", create, destroy,
                                       decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
