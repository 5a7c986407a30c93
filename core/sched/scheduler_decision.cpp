// The policy boundary of the scheduler: the read-only view handed to the plugin, and
// the validation that turns its raw decision into grants the engine can honour.

#include <algorithm>

#include "core/sched/scheduler.hpp"

namespace inflight {
namespace {

inflight_seq_info make_info(const sequence& seq, int num_blocks_held) {
  inflight_seq_info info{};
  info.seq_id = seq.id;
  info.state = seq.status == seq_status::running     ? INFLIGHT_SEQ_RUNNING
               : seq.status == seq_status::preempted ? INFLIGHT_SEQ_PREEMPTED
                                                     : INFLIGHT_SEQ_WAITING;
  info.priority = seq.priority;
  info.arrival_time = seq.times.arrival;
  info.num_prompt_tokens = seq.num_prompt_tokens();
  info.num_tokens = seq.num_tokens();
  info.num_computed_tokens = seq.num_computed_tokens;
  info.num_generated_tokens = seq.num_generated_tokens();
  info.max_tokens = seq.params.max_tokens;
  info.num_blocks_held = num_blocks_held;
  info.num_tokens_needed = seq.num_tokens_needed();
  return info;
}

std::string seq_name(seq_id id) { return "sequence " + std::to_string(id); }

}  // namespace

void scheduler::build_view(std::uint64_t step_id) {
  view_running_.clear();
  view_waiting_.clear();
  for (seq_id id : running_) view_running_.push_back(make_info(seqs_.at(id), pool_.num_blocks_held(id)));
  for (seq_id id : waiting_) view_waiting_.push_back(make_info(seqs_.at(id), 0));
  decision_entries_.assign(view_running_.size() + view_waiting_.size(), inflight_schedule_entry{});
  decision_preempt_.assign(view_running_.size(), 0);
  view_ = inflight_sched_view{};
  view_.step_id = step_id;
  view_.running = view_running_.data();
  view_.num_running = view_running_.size();
  view_.waiting = view_waiting_.data();
  view_.num_waiting = view_waiting_.size();
  view_.budget.max_num_batched_tokens = config_.max_num_batched_tokens;
  view_.budget.max_num_seqs = config_.max_num_seqs;
  view_.budget.num_free_blocks = pool_.num_free_blocks();
  view_.budget.num_total_blocks = pool_.num_blocks();
  view_.budget.block_size = pool_.block_size();
}

std::vector<scheduler::grant> scheduler::decide_and_validate(std::uint64_t step_id) {
  build_view(step_id);
  inflight_decision decision{};
  decision.scheduled = decision_entries_.data();
  decision.scheduled_capacity = decision_entries_.size();
  decision.preempt = decision_preempt_.data();
  decision.preempt_capacity = decision_preempt_.size();
  validation v;
  v.budget_left = config_.max_num_batched_tokens;
  if (auto decided = policy_.decide(view_, decision); !decided) {
    reject(decided.error().message);
  } else {
    apply_policy_preemptions(decision, v);
    std::size_t n = decision.num_scheduled;
    if (n > decision.scheduled_capacity) {
      reject("decision claims " + std::to_string(n) + " entries, capacity is " +
             std::to_string(decision.scheduled_capacity) + ": extra entries ignored");
      n = decision.scheduled_capacity;
    }
    for (std::size_t i = 0; i < n; ++i) validate_entry(decision.scheduled[i], v);
  }
  ensure_progress(v);
  return std::move(v.grants);
}

void scheduler::apply_policy_preemptions(const inflight_decision& decision, validation& v) {
  std::size_t n = decision.num_preempt;
  if (n > decision.preempt_capacity) {
    reject("decision claims " + std::to_string(n) + " preemptions, capacity is " +
           std::to_string(decision.preempt_capacity) + ": extra entries ignored");
    n = decision.preempt_capacity;
  }
  for (std::size_t i = 0; i < n; ++i) {
    seq_id id = decision.preempt[i];
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.status != seq_status::running) {
      reject("decision preempts " + seq_name(id) + ", which is not running: refused");
      continue;
    }
    preempt(it->second);
    v.policy_preempted.insert(id);
  }
}

void scheduler::validate_entry(const inflight_schedule_entry& entry, validation& v) {
  const seq_id id = entry.seq_id;
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return reject("decision names unknown " + seq_name(id) + ": refused");
  if (v.engine_preempted.contains(id)) return;  // lost its blocks to an earlier entry
  if (v.policy_preempted.contains(id))
    return reject("decision both preempts and schedules " + seq_name(id) + ": refused");
  if (v.granted.contains(id)) return reject("decision names " + seq_name(id) + " twice: refused");
  sequence& seq = it->second;
  int n = entry.num_tokens;
  if (n <= 0)
    return reject("decision gives " + seq_name(id) + " " + std::to_string(n) + " tokens: refused");
  if (n > seq.num_tokens_needed()) {
    reject("decision gives " + seq_name(id) + " " + std::to_string(n) + " tokens, it needs " +
           std::to_string(seq.num_tokens_needed()) + ": clipped");
    n = seq.num_tokens_needed();
  }
  if (static_cast<int>(v.grants.size()) >= config_.max_num_seqs)
    return reject("decision exceeds max_num_seqs " + std::to_string(config_.max_num_seqs) + ": " +
                  seq_name(id) + " refused");
  const bool is_admission = seq.status != seq_status::running;
  if (is_admission && num_running() + v.num_admitted >= config_.max_num_seqs)
    return reject("no free seat (max_num_seqs " + std::to_string(config_.max_num_seqs) +
                  ") to admit " + seq_name(id) + ": refused");
  if (v.budget_left <= 0)
    return reject("token budget spent: " + seq_name(id) + " refused");
  if (n > v.budget_left) {
    reject("decision exceeds the token budget: " + seq_name(id) + " clipped to " +
           std::to_string(v.budget_left));
    n = v.budget_left;
  }
  n = fit_blocks(seq, n, is_admission, v);
  if (n <= 0) return;
  v.budget_left -= n;
  v.num_reserved_blocks += pool_.num_new_blocks_needed(id, seq.num_computed_tokens + n);
  if (is_admission) ++v.num_admitted;
  v.granted.insert(id);
  v.grants.push_back({id, n});
}

int scheduler::fit_blocks(sequence& seq, int num_tokens, bool is_admission, validation& v) {
  auto num_free = [&] { return pool_.num_free_blocks() - v.num_reserved_blocks; };
  const int needed = pool_.num_new_blocks_needed(seq.id, seq.num_computed_tokens + num_tokens);
  // Running sequences make room by preempting others (recompute); admissions never do.
  while (!is_admission && needed > num_free()) {
    auto victim = pick_victim(seq.id, v);
    if (!victim) break;
    preempt(seqs_.at(*victim));
    v.engine_preempted.insert(*victim);
  }
  if (needed <= num_free()) return num_tokens;
  const int fit =
      (pool_.num_blocks_held(seq.id) + num_free()) * pool_.block_size() - seq.num_computed_tokens;
  if (is_admission) {
    if (fit > 0) {
      reject("decision asks more KV blocks than are free: " + seq_name(seq.id) + " clipped to " +
             std::to_string(fit) + " tokens");
      return fit;
    }
    reject("no free KV block to admit " + seq_name(seq.id) + ": refused");
    return 0;
  }
  if (fit > 0) return fit;
  // Nobody left to make room for it: it recomputes later, as the latest victim.
  preempt(seq);
  v.engine_preempted.insert(seq.id);
  return 0;
}

std::optional<seq_id> scheduler::pick_victim(seq_id requester, const validation& v) const {
  // Lowest priority first; among equals the latest admitted (vLLM's choice).
  std::optional<seq_id> best;
  int best_priority = 0;
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (*it == requester || v.granted.contains(*it)) continue;
    int p = seqs_.at(*it).priority;
    if (!best || p < best_priority) {
      best = *it;
      best_priority = p;
    }
  }
  return best;
}

void scheduler::ensure_progress(validation& v) {
  if (!v.grants.empty() || !has_work()) return;
  // A policy that schedules nothing would stall the engine forever: run the oldest
  // running sequence, or else the oldest waiting one.
  const auto& queue_ids = running_.empty() ? std::vector<seq_id>(waiting_.begin(), waiting_.end())
                                           : running_;
  auto oldest = std::min_element(queue_ids.begin(), queue_ids.end(), [&](seq_id a, seq_id b) {
    return seqs_.at(a).times.arrival < seqs_.at(b).times.arrival;
  });
  reject("policy '" + policy_.name() + "' scheduled nothing while work was waiting: the engine runs " +
         seq_name(*oldest));
  v.policy_preempted.erase(*oldest);
  const sequence& seq = seqs_.at(*oldest);
  int n = std::min(seq.num_tokens_needed(), v.budget_left);
  validate_entry(inflight_schedule_entry{*oldest, n}, v);
}

void scheduler::reject(std::string reason) {
  ++counters_.num_rejected_decisions;
  if (rejection_logger_) rejection_logger_(reason);
  last_rejection_ = std::move(reason);
}

void scheduler::preempt(sequence& seq) {
  pool_.release(seq.id);
  kv_log_.releases.push_back(seq.id);
  std::erase(running_, seq.id);
  waiting_.push_front(seq.id);
  seq.status = seq_status::preempted;
  seq.num_computed_tokens = 0;  // recompute prompt + generated tokens later
  ++seq.num_preemptions;
  ++counters_.num_preemptions;
}

}  // namespace inflight
