// fcfs: vLLM-like first come, first served. Running sequences first (decodes and the
// rest of partial prompts) in arrival order, then waiting ones in arrival order;
// chunked prefill with at most one partial prompt per step. Admission stops at the
// first waiting sequence that does not get a seat or a block, so no later arrival
// overtakes it (no starvation).

#include <string>

#include "policy_helpers.hpp"

namespace {

using namespace inflight::policies;

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  if (num_settings > 0)
    return fail(error, capacity, std::string("fcfs takes no settings, got '") + settings[0].key + "'");
  *out_state = nullptr;
  return INFLIGHT_POLICY_OK;
}

void destroy(void*) {}

inflight_policy_status decide(void*, const inflight_sched_view* view, inflight_decision* decision) {
  decision_builder out(view, decision);
  bool has_partial = false;
  for (const auto* seq : by_arrival(view->running, view->num_running)) {
    int n = std::min(seq->num_tokens_needed, out.budget_left());
    // only one prompt may be cut short per step; the others wait for a whole chunk
    if (n < seq->num_tokens_needed && has_partial) continue;
    int granted = out.add_running(*seq);
    if (granted > 0 && granted < seq->num_tokens_needed) has_partial = true;
  }
  for (const auto* seq : by_arrival(view->waiting, view->num_waiting)) {
    int fit = inflight_tokens_fitting(seq, out.num_free_blocks(), view->budget.block_size);
    int n = std::min({seq->num_tokens_needed, out.budget_left(), fit});
    if (n < seq->num_tokens_needed && has_partial) break;
    int granted = out.add_waiting(*seq);
    if (granted == 0) break;
    if (granted < seq->num_tokens_needed) has_partial = true;
  }
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "fcfs", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
