// splitfuse: a fixed token budget every step (DeepSpeed-FastGen's Dynamic SplitFuse,
// Sarathi's chunked prefill). All decodes first, so a long prompt never stalls them;
// then prompt chunks, oldest first, until the budget is full: several partial
// prefills may share a step.
//
// Settings:
//   max_chunk_tokens  most tokens one prompt gets in a step (0 = the whole budget)

#include <string>

#include "policy_helpers.hpp"

namespace {

using namespace inflight::policies;

struct splitfuse_state {
  int max_chunk_tokens = 0;
};

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  splitfuse_state state;
  for (std::size_t i = 0; i < num_settings; ++i) {
    std::string key = settings[i].key != nullptr ? settings[i].key : "";
    if (key != "max_chunk_tokens")
      return fail(error, capacity, "splitfuse: unknown setting '" + key + "' (known: max_chunk_tokens)");
    if (!parse_count(settings[i].value, state.max_chunk_tokens))
      return fail(error, capacity, "splitfuse: max_chunk_tokens must be a non-negative integer");
  }
  *out_state = new splitfuse_state(state);
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<splitfuse_state*>(state); }

inflight_policy_status decide(void* state, const inflight_sched_view* view,
                              inflight_decision* decision) {
  const auto* s = static_cast<const splitfuse_state*>(state);
  const int chunk = s->max_chunk_tokens > 0 ? s->max_chunk_tokens : view->budget.max_num_batched_tokens;
  decision_builder out(view, decision);
  auto running = by_arrival(view->running, view->num_running);
  for (const auto* seq : running)
    if (seq->num_tokens_needed == 1) out.add_running(*seq);
  for (const auto* seq : running)
    if (seq->num_tokens_needed > 1) out.add_running(*seq, chunk);
  for (const auto* seq : by_arrival(view->waiting, view->num_waiting)) {
    if (out.is_full() || !out.has_seat() || out.num_free_blocks() <= 0) break;
    out.add_waiting(*seq, chunk);
  }
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "splitfuse", create, destroy,
                                       decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
