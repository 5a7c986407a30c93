// tgi: the batching rule of Hugging Face text-generation-inference's router (its
// batching_task and Queue::next_batch, for models without chunked prefill). Running
// sequences decode every step. Waiting requests are admitted as a new batch, whose
// whole prompts are prefilled in one step that pauses the running decodes, only when
// enough of them fit: at least floor(waiting_served_ratio x running), or any number
// once the running batch has gone max_waiting_tokens steps without an admission (or
// when nothing runs). The new batch takes requests in queue order, stopping at the
// first that does not fit in max_batch_prefill_tokens, a seat or the KV blocks, and
// like TGI's block allocator it reserves at admission the blocks a request can ever
// need (prompt + max_tokens), so nobody is preempted.
//
// Where inflight differs from TGI (see docs/policies.md): the step counter is derived
// from the view (the fewest tokens any running sequence has generated, which is the
// number of steps since the newest admission, counting its prefill step), so a
// finished newcomer makes it jump; the prefill budget is not rounded up to a block;
// and a prompt longer than the prefill budget, which TGI refuses at validation, is
// admitted alone and prefilled over several consecutive prefill-only steps.
//
// Settings:
//   waiting_served_ratio      1.2   admit when fitting waiting >= ratio x running
//   max_waiting_tokens        20    ... or after this many steps without an admission
//   max_batch_prefill_tokens  4096  prompt tokens of one prefill step (and the step's
//                                   max_num_batched_tokens, whichever is smaller)
//   reserve_max_tokens        true  false: reserve only the prompt's blocks

#include <string>

#include "whole_prompts.hpp"

namespace {

using namespace inflight::policies;

struct tgi_state {
  double waiting_served_ratio = 1.2;
  int max_waiting_tokens = 20;
  int max_batch_prefill_tokens = 4096;
  bool is_reserving = true;
};

inflight_policy_status parse_setting(tgi_state& state, const std::string& key, const char* value,
                                     char* error, std::size_t capacity) {
  if (key == "waiting_served_ratio") {
    if (!parse_ratio(value, state.waiting_served_ratio))
      return fail(error, capacity, "tgi: waiting_served_ratio must be a non-negative number");
  } else if (key == "max_waiting_tokens") {
    if (!parse_count(value, state.max_waiting_tokens))
      return fail(error, capacity, "tgi: max_waiting_tokens must be a non-negative integer");
  } else if (key == "max_batch_prefill_tokens") {
    if (!parse_count(value, state.max_batch_prefill_tokens) || state.max_batch_prefill_tokens < 1)
      return fail(error, capacity, "tgi: max_batch_prefill_tokens must be a positive integer");
  } else if (key == "reserve_max_tokens") {
    if (!parse_bool(value, state.is_reserving))
      return fail(error, capacity, "tgi: reserve_max_tokens must be true or false");
  } else {
    return fail(error, capacity,
                "tgi: unknown setting '" + key +
                    "' (known: waiting_served_ratio, max_waiting_tokens, max_batch_prefill_tokens, "
                    "reserve_max_tokens)");
  }
  return INFLIGHT_POLICY_OK;
}

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  tgi_state state;
  for (std::size_t i = 0; i < num_settings; ++i) {
    std::string key = settings[i].key != nullptr ? settings[i].key : "";
    if (auto status = parse_setting(state, key, settings[i].value, error, capacity); status != INFLIGHT_POLICY_OK)
      return status;
  }
  *out_state = new tgi_state(state);
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<tgi_state*>(state); }

/// Steps since the newest running sequence was admitted, its prefill step included:
/// every running sequence gains one token a step, so it is the fewest generated.
int steps_since_admission(const inflight_sched_view* view) {
  int fewest = INT_MAX;
  for (std::size_t i = 0; i < view->num_running; ++i)
    fewest = std::min(fewest, view->running[i].num_generated_tokens);
  return fewest;
}

/// The smallest new batch worth pausing the decodes for (TGI's min_size).
int min_new_batch(const tgi_state& s, const inflight_sched_view* view) {
  if (view->num_running == 0 || steps_since_admission(view) >= s.max_waiting_tokens) return 1;
  // TGI floors in f32, where 1.2 is a hair above 1.2; the epsilon keeps 5 x 1.2 at 6
  const double wanted = std::floor(static_cast<double>(view->num_running) * s.waiting_served_ratio + 1e-9);
  return std::max(1, static_cast<int>(std::min<double>(wanted, INT_MAX)));
}

inflight_policy_status decide(void* state, const inflight_sched_view* view, inflight_decision* decision) {
  const auto* s = static_cast<const tgi_state*>(state);
  decision_builder out(view, decision);
  const int prefill_budget = std::min(s->max_batch_prefill_tokens, view->budget.max_num_batched_tokens);
  // an over-long prompt in flight: its prefill goes on, decodes stay paused
  if (auto partial = partial_prefills(view); !partial.empty()) {
    for (const auto* seq : partial) out.add_running(*seq, prefill_budget);
    return INFLIGHT_POLICY_OK;
  }
  whole_prompt_limits limits{prefill_budget, prefill_budget, s->is_reserving};
  auto plan = plan_whole_admissions(view, out, limits);
  if (!plan.empty() && static_cast<int>(plan.size()) >= min_new_batch(*s, view)) {
    admit(out, plan);
    return INFLIGHT_POLICY_OK;
  }
  for (const auto* seq : by_arrival(view->running, view->num_running)) out.add_running(*seq);
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "tgi", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
