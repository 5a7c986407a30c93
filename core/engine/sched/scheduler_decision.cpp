// The policy boundary of the scheduler: the read-only view handed to the plugin, and
// the validation that turns its raw decision into the step's kv asks. Blocks are
// checked against the view the policy saw; the KV manager's grant has the last word.

#include <algorithm>

#include "core/engine/sched/scheduler.hpp"

namespace inflight {
namespace {

/// Tokens in the KV cache for planning: a waiting sequence's cached prefix counts.
int planned_computed(const sequence& seq) {
  return seq.status == seq_status::running ? seq.num_computed_tokens : seq.num_cached_hint;
}

inflight_seq_info make_info(const sequence& seq) {
  inflight_seq_info info{};
  info.seq_id = seq.id;
  info.state = seq.status == seq_status::running     ? INFLIGHT_SEQ_RUNNING
               : seq.status == seq_status::preempted ? INFLIGHT_SEQ_PREEMPTED
                                                     : INFLIGHT_SEQ_WAITING;
  info.priority = seq.priority;
  info.arrival_time = seq.times.arrival;
  info.num_prompt_tokens = seq.num_prompt_tokens();
  info.num_tokens = seq.num_tokens();
  info.num_computed_tokens = planned_computed(seq);
  info.num_generated_tokens = seq.num_generated_tokens();
  info.max_tokens = seq.params.max_tokens;
  info.num_blocks_held = seq.num_blocks_held;
  info.num_tokens_needed = seq.num_tokens() - planned_computed(seq);
  info.num_cached_tokens = seq.status == seq_status::running ? seq.num_cached_tokens : seq.num_cached_hint;
  info.num_preemptions = seq.num_preemptions;
  info.ttft_target = seq.targets.ttft_ms / 1000.0;
  info.tpot_target = seq.targets.tpot_ms / 1000.0;
  info.first_token_time = seq.times.first_token.value_or(-1.0);
  return info;
}

std::string seq_name(seq_id id) { return "sequence " + std::to_string(id); }

}  // namespace

void scheduler::build_view(std::uint64_t step_id) {
  view_running_.clear();
  view_waiting_.clear();
  for (seq_id id : running_) view_running_.push_back(make_info(seqs_.at(id)));
  for (seq_id id : waiting_) view_waiting_.push_back(make_info(seqs_.at(id)));
  decision_entries_.assign(view_running_.size() + view_waiting_.size(), inflight_schedule_entry{});
  decision_preempt_.assign(view_running_.size(), 0);
  decision_shed_.assign(view_running_.size() + view_waiting_.size(), 0);
  view_ = inflight_sched_view{};
  view_.step_id = step_id;
  view_.running = view_running_.data();
  view_.num_running = view_running_.size();
  view_.waiting = view_waiting_.data();
  view_.num_waiting = view_waiting_.size();
  view_.budget.max_num_batched_tokens = config_.max_num_batched_tokens;
  view_.budget.max_num_seqs = config_.max_num_seqs;
  // The blocks of sequences finished since the last grant are free by the next one.
  view_.budget.num_free_blocks = kv_.num_free_blocks + num_released_blocks_;
  view_.budget.num_total_blocks = kv_.num_blocks;
  view_.budget.block_size = kv_.block_size;
  view_.now = now();
}

scheduler::validation scheduler::decide_and_validate(std::uint64_t step_id) {
  build_view(step_id);
  inflight_decision decision{};
  decision.scheduled = decision_entries_.data();
  decision.scheduled_capacity = decision_entries_.size();
  decision.preempt = decision_preempt_.data();
  decision.preempt_capacity = decision_preempt_.size();
  decision.shed = decision_shed_.data();
  decision.shed_capacity = decision_shed_.size();
  validation v;
  v.budget_left = config_.max_num_batched_tokens;
  v.num_free_blocks = view_.budget.num_free_blocks;
  if (auto decided = policy_.decide(view_, decision); !decided) {
    reject(decided.error().message);
    return v;
  }
  apply_policy_sheds(decision, v);
  apply_policy_preemptions(decision, v);
  std::size_t n = decision.num_scheduled;
  if (n > decision.scheduled_capacity) {
    reject("decision claims " + std::to_string(n) + " entries, capacity is " +
           std::to_string(decision.scheduled_capacity) + ": extra entries ignored");
    n = decision.scheduled_capacity;
  }
  for (std::size_t i = 0; i < n; ++i) validate_entry(decision.scheduled[i], v);
  return v;
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
    v.num_free_blocks += it->second.num_blocks_held;
    queue_release(it->second, /*is_finished=*/false);
    preempt(it->second);
    v.policy_preempted.insert(id);
  }
}

void scheduler::apply_policy_sheds(const inflight_decision& decision, validation& v) {
  std::size_t n = decision.num_shed;
  if (n > decision.shed_capacity) {
    reject("decision claims " + std::to_string(n) + " sheds, capacity is " +
           std::to_string(decision.shed_capacity) + ": extra entries ignored");
    n = decision.shed_capacity;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const seq_id id = decision.shed[i];
    auto it = seqs_.find(id);
    if (it == seqs_.end()) {
      reject("decision sheds unknown " + seq_name(id) + ": refused");
      continue;
    }
    const sequence& seq = it->second;
    v.num_free_blocks += seq.num_blocks_held;  // back with this step's kv request
    // A load condition like a queue timeout: 429, retry later; the message says it was shed.
    std::string why = std::string(shed_message) + ": it could not meet its latency target";
    if (seq.targets.ttft_ms > 0 && !seq.times.first_token)
      why += " (time to first token " + std::to_string(static_cast<long long>(seq.targets.ttft_ms)) + " ms)";
    ++counters_.num_shed;
    shed_events_.push_back(finish_sequence(it->second, finish_reason::error, error{errc::queue_timeout, why}));
  }
}

void scheduler::validate_entry(const inflight_schedule_entry& entry, validation& v) {
  const seq_id id = entry.seq_id;
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return reject("decision names unknown " + seq_name(id) + ": refused");
  if (v.policy_preempted.contains(id))
    return reject("decision both preempts and schedules " + seq_name(id) + ": refused");
  if (v.asked.contains(id)) return reject("decision names " + seq_name(id) + " twice: refused");
  const sequence& seq = it->second;
  int n = entry.num_tokens;
  const int needed = seq.num_tokens() - planned_computed(seq);
  if (n <= 0)
    return reject("decision gives " + seq_name(id) + " " + std::to_string(n) + " tokens: refused");
  if (n > needed) {
    reject("decision gives " + seq_name(id) + " " + std::to_string(n) + " tokens, it needs " +
           std::to_string(needed) + ": clipped");
    n = needed;
  }
  if (static_cast<int>(v.asks.size()) >= config_.max_num_seqs)
    return reject("decision exceeds max_num_seqs " + std::to_string(config_.max_num_seqs) + ": " +
                  seq_name(id) + " refused");
  const bool is_admission = seq.status != seq_status::running;
  if (is_admission && num_running() + v.num_admitted >= config_.max_num_seqs)
    return reject("no free seat (max_num_seqs " + std::to_string(config_.max_num_seqs) +
                  ") to admit " + seq_name(id) + ": refused");
  if (v.budget_left <= 0)
    return reject("token budget spent: " + seq_name(id) + " refused");
  // A resource of the step, not a fault of the policy: the sequence waits for a step
  // its adapter fits in.
  const bool is_new_adapter =
      seq.adapter && std::find(v.adapters.begin(), v.adapters.end(), seq.adapter.get()) == v.adapters.end();
  if (is_new_adapter && config_.max_loras_per_step > 0 && int(v.adapters.size()) >= config_.max_loras_per_step) {
    ++counters_.num_lora_waits;
    return;
  }
  if (n > v.budget_left) {
    reject("decision exceeds the token budget: " + seq_name(id) + " clipped to " +
           std::to_string(v.budget_left));
    n = v.budget_left;
  }
  if (is_admission) {
    n = fit_admission(seq, n, v);
    if (n <= 0) return;
    ++v.num_admitted;
  } else {
    // A running sequence short of blocks makes room by preempting others (the KV
    // manager does, in victim order); the view's count only tracks the demand.
    v.num_free_blocks -= num_blocks_for(seq.num_computed_tokens + n, kv_.block_size) - seq.num_blocks_held;
  }
  v.budget_left -= n;
  if (is_new_adapter) v.adapters.push_back(seq.adapter.get());
  v.asked.insert(id);
  v.asks.push_back(make_ask(seq, n));
}

int scheduler::fit_admission(const sequence& seq, int num_tokens, validation& v) {
  // Admissions never preempt: they take free blocks or wait.
  // The view counts a cached prefix as blocks to take (true for cached blocks nobody
  // holds; shared ones cost nothing, so the grant can only be better).
  const int needed = num_blocks_for(planned_computed(seq) + num_tokens, kv_.block_size);
  if (needed <= v.num_free_blocks) {
    v.num_free_blocks -= needed;
    return num_tokens;
  }
  const int fit = v.num_free_blocks * kv_.block_size - planned_computed(seq);
  if (fit <= 0) {
    reject("no free KV block to admit " + seq_name(seq.id) + ": refused");
    return 0;
  }
  reject("decision asks more KV blocks than are free: " + seq_name(seq.id) + " clipped to " +
         std::to_string(fit) + " tokens");
  v.num_free_blocks = 0;
  return fit;
}

kv_ask scheduler::make_ask(const sequence& seq, int num_tokens) const {
  kv_ask ask;
  ask.id = seq.id;
  ask.num_tokens = num_tokens;
  ask.num_computed_tokens = seq.num_computed_tokens;
  ask.num_total_tokens = seq.num_tokens();
  ask.is_admission = seq.status != seq_status::running;
  return ask;
}

std::vector<kv_release> scheduler::victim_order() const {
  // Lowest priority first; among equals the latest admitted (vLLM's choice).
  std::vector<seq_id> order(running_.rbegin(), running_.rend());
  std::stable_sort(order.begin(), order.end(),
                   [&](seq_id a, seq_id b) { return seqs_.at(a).priority < seqs_.at(b).priority; });
  std::vector<kv_release> victims;
  for (seq_id id : order) victims.push_back({id, seqs_.at(id).num_computed_tokens, false});
  return victims;
}

std::optional<kv_ask> scheduler::fallback_ask() const {
  // A policy that schedules nothing runnable would stall the engine forever: the KV
  // manager then runs the oldest running sequence, or else the oldest waiting one.
  if (!has_work()) return std::nullopt;
  const auto& queue_ids = running_.empty() ? std::vector<seq_id>(waiting_.begin(), waiting_.end())
                                           : running_;
  auto oldest = std::min_element(queue_ids.begin(), queue_ids.end(), [&](seq_id a, seq_id b) {
    return seqs_.at(a).times.arrival < seqs_.at(b).times.arrival;
  });
  const sequence& seq = seqs_.at(*oldest);
  return make_ask(seq, std::min(seq.num_tokens() - planned_computed(seq), config_.max_num_batched_tokens));
}

void scheduler::reject(std::string reason) {
  ++counters_.num_rejected_decisions;
  if (rejection_logger_) rejection_logger_(reason);
  last_rejection_ = std::move(reason);
}

void scheduler::preempt(sequence& seq) {
  std::erase(running_, seq.id);
  waiting_.push_front(seq.id);
  seq.status = seq_status::preempted;
  seq.num_computed_tokens = 0;  // recompute prompt + generated tokens later
  seq.num_blocks_held = 0;
  seq.pooled.clear();           // its hidden states are computed again too
  seq.spec.draft.clear();
  ++seq.num_preemptions;
  ++counters_.num_preemptions;
}

}  // namespace inflight
