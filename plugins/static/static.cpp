// static: the naive baseline. A batch of up to max_num_seqs waiting requests is
// admitted only when no sequence is running; nothing joins a batch in flight, and
// the batch runs until its last sequence finishes.
//
// Prefill is unchunked: a request is admitted only if its whole prompt fits in what
// is left of the step's token budget (and in the free KV blocks). The one exception
// is a prompt longer than max_num_batched_tokens on its own: it is admitted alone and
// its prompt spans several steps, since the engine never exceeds the budget. Give
// `static` a max_num_batched_tokens of at least the longest prompt (better: the sum
// of a batch's prompts) to measure true static batching.

#include <string>

#include "policy_helpers.hpp"

namespace {

using namespace inflight::policies;

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  if (num_settings > 0)
    return fail(error, capacity, std::string("static takes no settings, got '") + settings[0].key + "'");
  *out_state = nullptr;
  return INFLIGHT_POLICY_OK;
}

void destroy(void*) {}

inflight_policy_status decide(void*, const inflight_sched_view* view, inflight_decision* decision) {
  decision_builder out(view, decision);
  if (view->num_running > 0) {
    for (std::size_t i = 0; i < view->num_running; ++i) out.add_running(view->running[i]);
    return INFLIGHT_POLICY_OK;
  }
  for (const auto* seq : by_arrival(view->waiting, view->num_waiting)) {
    int fit = inflight_tokens_fitting(seq, out.num_free_blocks(), view->budget.block_size);
    bool fits_whole = seq->num_tokens_needed <= std::min(out.budget_left(), fit);
    if (!fits_whole && out.num_scheduled() > 0) break;
    out.add_waiting(*seq);
    if (!fits_whole) break;  // an oversized prompt runs alone
  }
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "static", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
