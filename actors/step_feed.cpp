#include "actors/step_feed.hpp"

#include <algorithm>
#include <unordered_map>

namespace inflight {

void step_feed::set_sink(std::shared_ptr<step_sink> sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
  is_active_.store(sink_ != nullptr, std::memory_order_relaxed);
}

void step_feed::publish(const step_summary& step) {
  std::lock_guard lock(mutex_);
  if (sink_) sink_->on_step(step);
}

void step_recorder::on_planned(const step_feed& feed, const step_plan& plan, const scheduler& sched,
                               double start_s) {
  if (!feed.is_active()) {
    draft_.reset();
    before_.reset();
    finished_.clear();
    return;
  }
  auto s = summarize_plan(plan, sched.config().max_num_batched_tokens);
  s.start_s = start_s;
  for (const auto& q : s.seqs) {
    const sequence* seq = sched.find(q.id);
    // Admitted by this step's schedule(): a prefix-cache hit starts past position 0, and a
    // recompute after preemption was first scheduled earlier.
    if (seq != nullptr && seq->times.first_scheduled && *seq->times.first_scheduled >= start_s)
      s.joined.push_back(q.id);
  }
  s.num_joined = int(s.joined.size());
  if (before_) {
    // Left the running set during this schedule() but still live: preempted.
    const auto& now = sched.running();
    for (auto id : before_->running) {
      if (std::find(now.begin(), now.end(), id) == now.end() && sched.find(id) != nullptr) s.preempted.push_back(id);
    }
    s.num_preemptions = int(sched.num_preemptions() - before_->num_preemptions);
  }
  draft_ = std::move(s);
}

void step_recorder::on_events(const step_feed& feed, const std::vector<seq_event>& events) {
  if (!feed.is_active()) return;
  std::unordered_map<seq_id, int> num_tokens;  // a drafted decode's tokens: its kept draft + 1
  for (const auto& ev : events) {
    if (ev.type == seq_event::kind::finished) finished_.push_back({ev.id, ev.reason});
    if (ev.type == seq_event::kind::token) ++num_tokens[ev.id];
  }
  if (!draft_) return;
  for (const auto& q : draft_->seqs) {
    auto it = num_tokens.find(q.id);
    if (q.num_draft_tokens > 0 && it != num_tokens.end()) draft_->num_accepted_tokens += it->second - 1;
  }
}

void step_recorder::on_applied(step_feed& feed, const scheduler& sched, double end_s) {
  if (!draft_ || !feed.is_active()) return;
  draft_->end_s = end_s;
  draft_->busy_s = end_s - draft_->start_s;
  publish(feed, sched, *draft_);
  draft_.reset();
}

void step_recorder::on_idle(step_feed& feed, const scheduler& sched, double now_s) {
  if (draft_ || finished_.empty() || !feed.is_active()) return;
  step_summary s;
  s.first_step_id = s.last_step_id = last_step_id_;
  s.num_steps = 0;
  s.start_s = s.end_s = now_s;
  s.token_budget = sched.config().max_num_batched_tokens;
  publish(feed, sched, s);
}

void step_recorder::publish(step_feed& feed, const scheduler& sched, step_summary& s) {
  s.finished = std::move(finished_);
  s.num_finished = int(s.finished.size());
  finished_.clear();
  s.kv_usage = s.max_kv_usage = sched.kv_usage();
  s.num_waiting = sched.num_waiting();
  s.num_running = sched.num_running();
  feed.publish(s);
  last_step_id_ = s.last_step_id;
  before_ = baseline{sched.running(), sched.num_preemptions()};
}

}  // namespace inflight
