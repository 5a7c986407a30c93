#include "core/engine/metrics/step_summary.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/model/lora.hpp"

namespace inflight {
namespace {

template <class T>
void append_capped(std::vector<T>& into, const std::vector<T>& more, std::size_t cap) {
  for (const auto& x : more) {
    if (into.size() >= cap) return;
    into.push_back(x);
  }
}

void merge_seqs(step_summary& into, const step_summary& later, std::size_t max_seqs) {
  std::unordered_map<seq_id, std::size_t> index;
  index.reserve(into.seqs.size());
  for (std::size_t i = 0; i < into.seqs.size(); ++i) index.emplace(into.seqs[i].id, i);
  for (const auto& s : later.seqs) {
    if (auto it = index.find(s.id); it != index.end()) {
      auto& mine = into.seqs[it->second];
      mine.num_prefill_tokens += s.num_prefill_tokens;
      mine.num_decode_tokens += s.num_decode_tokens;
      mine.num_draft_tokens += s.num_draft_tokens;
    } else if (into.seqs.size() < max_seqs) {
      index.emplace(s.id, into.seqs.size());
      into.seqs.push_back(s);
    } else {
      ++into.num_seqs_dropped;
    }
  }
  into.num_seqs_dropped += later.num_seqs_dropped;
}

/// Keeps a single summary within max_seqs (a step can hold more sequences than that).
void cap(step_summary& s, std::size_t max_seqs) {
  if (s.seqs.size() > max_seqs) {
    s.num_seqs_dropped += int(s.seqs.size() - max_seqs);
    s.seqs.resize(max_seqs);
  }
  if (s.joined.size() > max_seqs) s.joined.resize(max_seqs);
  if (s.finished.size() > max_seqs) s.finished.resize(max_seqs);
  if (s.preempted.size() > max_seqs) s.preempted.resize(max_seqs);
}

/// The name of the LoRA adapter `s` runs with ("": none, or not in the plan).
std::string adapter_name(const step_plan& plan, const seq_step& s) {
  if (s.adapter < 0 || std::size_t(s.adapter) >= plan.adapters.size() || !plan.adapters[std::size_t(s.adapter)]) return {};
  return plan.adapters[std::size_t(s.adapter)]->name;
}

}  // namespace

step_summary summarize_plan(const step_plan& plan, int token_budget) {
  step_summary s;
  s.first_step_id = s.last_step_id = plan.step_id;
  s.token_budget = token_budget;
  s.seqs.reserve(plan.seqs.size());
  for (const auto& p : plan.seqs) {
    const int n = int(p.tokens.size()) - p.num_draft;  // a drafted decode is one decode and its draft
    const bool is_decode = n == 1 && p.start_position >= p.num_prompt_tokens;
    s.seqs.push_back({p.id, is_decode ? 0 : n, is_decode ? 1 : 0, p.start_position, p.num_draft, adapter_name(plan, p)});
    (is_decode ? s.num_decode_tokens : s.num_prefill_tokens) += n;
    s.num_draft_tokens += p.num_draft;
  }
  s.max_step_tokens = s.num_tokens();
  s.max_step_seqs = int(plan.seqs.size());
  s.num_fused_steps = s.num_prefill_tokens > 0 && s.num_decode_tokens > 0 ? 1 : 0;
  return s;
}

void merge_summary(step_summary& into, const step_summary& later, std::size_t max_seqs) {
  into.last_step_id = later.last_step_id;
  into.num_steps += later.num_steps;
  into.end_s = later.end_s;
  into.busy_s += later.busy_s;
  into.token_budget = std::max(into.token_budget, later.token_budget);
  into.num_prefill_tokens += later.num_prefill_tokens;
  into.num_decode_tokens += later.num_decode_tokens;
  into.num_draft_tokens += later.num_draft_tokens;
  into.num_accepted_tokens += later.num_accepted_tokens;
  into.max_step_tokens = std::max(into.max_step_tokens, later.max_step_tokens);
  into.max_step_seqs = std::max(into.max_step_seqs, later.max_step_seqs);
  into.num_fused_steps += later.num_fused_steps;
  merge_seqs(into, later, max_seqs);
  append_capped(into.joined, later.joined, max_seqs);
  append_capped(into.finished, later.finished, max_seqs);
  append_capped(into.preempted, later.preempted, max_seqs);
  into.num_joined += later.num_joined;
  into.num_finished += later.num_finished;
  into.num_preemptions += later.num_preemptions;
  into.kv_usage = later.kv_usage;
  into.max_kv_usage = std::max(into.max_kv_usage, later.max_kv_usage);
  into.num_waiting = later.num_waiting;
  into.num_running = later.num_running;
}

step_queue::step_queue(std::size_t capacity, std::size_t max_seqs)
    : capacity_(std::max<std::size_t>(2, capacity)), max_seqs_(std::max<std::size_t>(1, max_seqs)) {}

void step_queue::push(step_summary s) {
  cap(s, max_seqs_);
  if (entries_.size() >= capacity_) compact();
  entries_.push_back(std::move(s));
}

std::vector<step_summary> step_queue::take() {
  std::vector<step_summary> out(std::make_move_iterator(entries_.begin()), std::make_move_iterator(entries_.end()));
  entries_.clear();
  return out;
}

void step_queue::compact() {
  std::deque<step_summary> merged;
  for (std::size_t i = 0; i < entries_.size(); i += 2) {
    merged.push_back(std::move(entries_[i]));
    if (i + 1 < entries_.size()) merge_summary(merged.back(), entries_[i + 1], max_seqs_);
  }
  entries_ = std::move(merged);
  ++num_compactions_;
}

}  // namespace inflight
