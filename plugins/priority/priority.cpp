// priority: higher `priority` first (ties: earlier arrival). Sequences are served in
// that order with chunked prefill; when a more important waiting sequence finds no
// seat or no KV block, the least important running sequences below it are preempted
// (they recompute later). A running sequence that lacks blocks for its own next
// tokens likewise preempts lower-priority ones.
//
// Settings:
//   preempt   true (default) / false: whether to preempt at all

#include <string>
#include <unordered_set>

#include "policy_helpers.hpp"

namespace {

using namespace inflight::policies;

struct priority_state {
  bool can_preempt = true;
};

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings,
                              void** out_state, char* error, std::size_t capacity) {
  priority_state state;
  for (std::size_t i = 0; i < num_settings; ++i) {
    std::string key = settings[i].key != nullptr ? settings[i].key : "";
    if (key != "preempt")
      return fail(error, capacity, "priority: unknown setting '" + key + "' (known: preempt)");
    if (!parse_bool(settings[i].value, state.can_preempt))
      return fail(error, capacity, "priority: preempt must be true or false");
  }
  *out_state = new priority_state(state);
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<priority_state*>(state); }

bool more_important(const inflight_seq_info* a, const inflight_seq_info* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->arrival_time != b->arrival_time) return a->arrival_time < b->arrival_time;
  return a->seq_id < b->seq_id;
}

class planner {
 public:
  planner(const priority_state& state, const inflight_sched_view* view, inflight_decision* decision)
      : state_(state), view_(view), out_(view, decision) {
    for (std::size_t i = 0; i < view->num_running; ++i) order_.push_back(&view->running[i]);
    for (std::size_t i = 0; i < view->num_waiting; ++i) order_.push_back(&view->waiting[i]);
    std::stable_sort(order_.begin(), order_.end(), more_important);
  }

  void run() {
    for (const auto* seq : order_) {
      if (out_.is_full()) break;
      if (preempted_.contains(seq->seq_id)) continue;
      if (seq->state == INFLIGHT_SEQ_RUNNING) {
        make_room(*seq, [&] { return blocks_for(*seq) > out_.num_free_blocks(); });
        out_.add_running(*seq);
      } else {
        make_room(*seq, [&] { return !out_.has_seat() || blocks_for(*seq) > out_.num_free_blocks(); });
        out_.add_waiting(*seq);
      }
    }
  }

 private:
  int blocks_for(const inflight_seq_info& seq) const {
    int n = std::min(seq.num_tokens_needed, out_.budget_left());
    return inflight_blocks_needed(&seq, n, view_->budget.block_size);
  }

  // Preempts the least important running sequences below `seq` while `is_short()`.
  template <class Pred>
  void make_room(const inflight_seq_info& seq, Pred is_short) {
    if (!state_.can_preempt) return;
    for (auto it = order_.rbegin(); it != order_.rend() && is_short(); ++it) {
      const auto* victim = *it;
      if (!more_important(&seq, victim)) break;  // only those ranked below it
      if (victim->state != INFLIGHT_SEQ_RUNNING || victim->priority >= seq.priority) continue;
      if (!preempted_.insert(victim->seq_id).second) continue;
      out_.preempt(*victim);
    }
  }

  const priority_state& state_;
  const inflight_sched_view* view_;
  decision_builder out_;
  std::vector<const inflight_seq_info*> order_;
  std::unordered_set<std::uint64_t> preempted_;
};

inflight_policy_status decide(void* state, const inflight_sched_view* view,
                              inflight_decision* decision) {
  planner(*static_cast<const priority_state*>(state), view, decision).run();
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "priority", create, destroy,
                                       decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) {
  return &vtable;
}
