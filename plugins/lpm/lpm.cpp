// lpm: longest prefix match first (SGLang's cache-aware policy). Waiting sequences
// whose prompts the prefix cache holds the most of are admitted first, so requests
// sharing a prefix run while its blocks are still cached, and each admission computes
// fewer tokens. Running sequences are served as splitfuse serves them: decodes first,
// then prompt chunks.
//
// Sorting the whole queue every step costs more than it saves when the queue is long
// (and a long queue waits on compute, not on the cache): above `max_waiting` waiting
// sequences it admits in arrival order, as SGLang does above 128.
//
// Needs policy ABI version 2 (each waiting sequence's num_cached_tokens).
//
// Settings:
//   max_waiting       longest queue it sorts by cached prefix (default 128; 0 = never)
//   max_chunk_tokens  most tokens one prompt gets in a step (0 = the whole budget)

#include <string>

#include "policy_helpers.hpp"

namespace {

using namespace inflight::policies;

struct lpm_state {
  int max_waiting = 128;
  int max_chunk_tokens = 0;
};

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  lpm_state state;
  for (std::size_t i = 0; i < num_settings; ++i) {
    const std::string key = settings[i].key != nullptr ? settings[i].key : "";
    int* target = key == "max_waiting" ? &state.max_waiting
                  : key == "max_chunk_tokens" ? &state.max_chunk_tokens
                                              : nullptr;
    if (target == nullptr)
      return fail(error, capacity, "lpm: unknown setting '" + key + "' (known: max_waiting, max_chunk_tokens)");
    if (!parse_count(settings[i].value, *target))
      return fail(error, capacity, "lpm: " + key + " must be a non-negative integer");
  }
  *out_state = new lpm_state(state);
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<lpm_state*>(state); }

/// Admission order: longest cached prefix first (ties: arrival), or arrival alone.
std::vector<const inflight_seq_info*> admission_order(const lpm_state& s, const inflight_sched_view* view) {
  auto order = by_arrival(view->waiting, view->num_waiting);
  if (s.max_waiting > 0 && view->num_waiting <= static_cast<std::size_t>(s.max_waiting)) {
    std::stable_sort(order.begin(), order.end(), [](const inflight_seq_info* a, const inflight_seq_info* b) {
      return a->num_cached_tokens > b->num_cached_tokens;
    });
  }
  return order;
}

inflight_policy_status decide(void* state, const inflight_sched_view* view, inflight_decision* decision) {
  const auto* s = static_cast<const lpm_state*>(state);
  const int chunk = s->max_chunk_tokens > 0 ? s->max_chunk_tokens : view->budget.max_num_batched_tokens;
  decision_builder out(view, decision);
  auto running = by_arrival(view->running, view->num_running);
  for (const auto* seq : running)
    if (seq->num_tokens_needed == 1) out.add_running(*seq);
  for (const auto* seq : running)
    if (seq->num_tokens_needed > 1) out.add_running(*seq, chunk);
  for (const auto* seq : admission_order(*s, view)) {
    if (out.is_full() || !out.has_seat() || out.num_free_blocks() <= 0) break;
    out.add_waiting(*seq, chunk);
  }
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "lpm", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
