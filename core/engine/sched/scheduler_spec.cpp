// Speculative decoding in the scheduler: which running decodes get a draft this step
// (the budget rule), the grammar's masks along a draft, and taking a checked draft's
// tokens. The backends check drafts (sample_rows in core/engine/sampling/sampler.hpp);
// the KV manager grants drafted tokens from free blocks only and takes back the blocks
// of refuted ones at the next grant (kv_ask::num_draft_tokens).

#include <algorithm>

#include "core/engine/sched/scheduler.hpp"

namespace inflight {
namespace {

/// The longest draft a request may ask for.
constexpr int max_draft_tokens = 16;

/// How fast a sequence's acceptance estimate follows its checks.
constexpr double acceptance_weight = 0.15;
/// How fast it returns towards the first estimate while the sequence does not draft.
constexpr double acceptance_recovery = 0.05;
/// How fast a drafter's time per proposed token follows its proposals.
constexpr double draft_time_weight = 0.1;

/// The drafter that is a model: the executor runs it, its K/V lie in the draft space.
constexpr std::string_view model_drafter = "draft";

}  // namespace

result<void> scheduler::resolve_speculation(sequence& seq, const speculation_choice& choice) {
  const speculative_config& c = config_.speculative;
  std::string method = choice.method.value_or(c.method);
  const int k = choice.num_tokens.value_or(c.num_speculative_tokens);
  if (k < 0 || k > max_draft_tokens)
    return make_error(errc::invalid_argument, "speculative num_tokens must be in [0, " +
                                                  std::to_string(max_draft_tokens) + "], got " + std::to_string(k));
  if (method == "off") method.clear();
  if (method.empty() || k == 0 || seq.is_prefill_only()) return {};
  if (method == model_drafter) {
    if (c.draft_model_context <= 0)
      return make_error(errc::invalid_argument, "the draft drafter needs a draft model: speculative.draft_model");
  } else if (!drafters_.contains(method)) {
    auto made = try_make_drafter(method, c.ngram);
    if (!made) return std::unexpected(made.error());
    drafters_.emplace(method, std::move(*made));
  }
  seq.spec.method = std::move(method);
  seq.spec.max_draft = k;
  return {};
}

bool scheduler::can_draft(const sequence& seq) const {
  if (seq.spec.method.empty() || seq.is_prefill_only() || seq.num_tokens_needed() != 1) return false;
  switch (seq.reasoning) {
    case reasoning_progress::none:
      return true;  // a grammar's masks follow the draft (fill_draft_masks)
    case reasoning_progress::thinking:
      // Free text, unless a spent budget or a grammar after it would need masks.
      return !seq.matcher && !seq.params.reasoning->budget;
    case reasoning_progress::awaiting:
      return false;
  }
  return false;
}

// The budget rule. A step of P prompt rows, N decodes and D drafted rows takes
// T = t0 + c_prompt P + c_decode N + c_draft D (t0: reading the weights; step_cost_fit learns
// each from the steps' own times). A drafted token costs m = c_draft, plus its drafter's
// time per proposed token (a draft model's forward step). One more row, kept with
// probability g, raises the step's rows per second (R = P + N + D) when
// (R + g) / (T + m) > R / T, that is when g > m R / T. Drafted token j is kept with
// probability a^j (a: the sequence's acceptance), so a draft grows while a^j beats the
// step's threshold: at one stream nearly any draft pays; a step full of decodes or of a
// prompt chunk drafts nothing, and speculation never costs throughput under load.
int scheduler::fit_draft(const sequence& seq, int max_draft, const step_rows& rows) const {
  max_draft = std::min({max_draft, seq.params.max_tokens - seq.num_generated_tokens() - 1,
                        max_context_ - seq.num_tokens()});
  const step_cost cost = step_costs();
  double propose_s = 0.0;  // the drafter's own time per proposed token
  if (const auto it = draft_seconds_.find(seq.spec.method); it != draft_seconds_.end() && learns_step_cost())
    propose_s = it->second;
  const double draft_s = cost.draft_row_seconds + propose_s;
  double kept = 1.0;
  int k = 0;
  for (; k < max_draft; ++k) {
    kept *= seq.spec.acceptance;
    const int drafted = rows.draft + k;
    const double step_s = cost.seconds(rows.prompt, rows.decode, drafted) + drafted * propose_s;
    if (!(step_s > 0.0) || kept * step_s <= draft_s * (rows.prompt + rows.decode + drafted)) break;
  }
  return k;
}

void scheduler::add_drafts(validation& v) {
  const bool has_draft_model = config_.speculative.draft_model_context > 0;
  if (drafters_.empty() && !has_draft_model) return;
  step_rows rows;
  for (const auto& a : v.asks) {
    // Its last row is sampled when it reaches the end of its tokens (a decode, a prompt's last chunk).
    const bool ends = a.is_admission ? a.num_tokens >= a.num_total_tokens
                                     : a.num_computed_tokens + a.num_tokens >= a.num_total_tokens;
    rows.decode += ends ? 1 : 0;
    rows.prompt += a.num_tokens - (ends ? 1 : 0);
  }
  v.num_free_draft_blocks = kv_.num_free_draft_blocks + num_released_draft_blocks_;
  const int bs = kv_.block_size;
  for (auto& ask : v.asks) {
    if (ask.is_admission) continue;
    sequence& seq = seqs_.at(ask.id);
    seq.spec.draft.clear();
    seq.spec.model_draft = 0;
    if (ask.num_tokens != seq.num_tokens_needed() || !can_draft(seq)) continue;
    const bool by_model = seq.spec.method == model_drafter;
    int max_draft = std::min(seq.spec.max_draft, v.budget_left);
    // The draft model reads every position but the last drafted token's.
    if (by_model) max_draft = std::min(max_draft, config_.speculative.draft_model_context - seq.num_tokens() + 1);
    int k = fit_draft(seq, max_draft, rows);
    if (k <= 0) {
      // Its estimate creeps back while it does not draft, so that a sequence whose
      // output turns repetitive (or a lighter step) gets drafts again.
      seq.spec.estimate_towards(spec_state{}.acceptance, acceptance_recovery);
      continue;
    }
    std::vector<token_id> draft;
    if (!by_model) {
      const double start = seconds_now();  // the text it reads counts: it is copied for it
      draft = drafters_.at(seq.spec.method)->propose(seq.id, seq.all_tokens(), k);
      const double propose_s = seconds_now() - start;
      step_propose_seconds_ += propose_s;
      if (!draft.empty()) {  // what a proposal costs, per token: a recent average
        const double s = propose_s / double(draft.size());
        auto [it, is_new] = draft_seconds_.try_emplace(seq.spec.method, s);
        if (!is_new) it->second += draft_time_weight * (s - it->second);
      }
      k = int(draft.size());
    }
    // Drafts take free blocks only (the view's, after every ask of the step).
    const int end = seq.num_computed_tokens + ask.num_tokens;
    const int covered = std::max(seq.num_blocks_held, num_blocks_for(end, bs));
    const auto extra = [&] { return num_blocks_for(end + k, bs) - covered; };
    while (k > 0 && extra() > v.num_free_blocks) --k;
    if (k <= 0 || (by_model && !ask_draft_space(seq, k, v))) continue;
    v.num_free_blocks -= std::max(0, extra());
    v.budget_left -= k;
    rows.draft += k;
    ask.num_tokens += k;
    ask.num_draft_tokens = k;
    if (by_model) {
      seq.spec.model_draft = k;  // its tokens come with on_drafts()
    } else {
      draft.resize(std::size_t(k));
      seq.spec.draft = std::move(draft);
    }
  }
}

bool scheduler::ask_draft_space(sequence& seq, int k, validation& v) {
  const int positions = seq.num_tokens() + k - 1;
  const int needed = num_blocks_for(positions, kv_.block_size);
  if (needed > kv_.num_draft_blocks) return false;
  while (needed - seq.spec.draft_blocks > v.num_free_draft_blocks) {
    // The cache used least recently of a sequence that does not draft this step goes.
    sequence* oldest = nullptr;
    for (auto& [id, other] : seqs_) {
      if (&other == &seq || other.spec.draft_blocks == 0 || other.spec.model_draft > 0) continue;
      if (oldest == nullptr || other.spec.draft_used < oldest->spec.draft_used) oldest = &other;
    }
    if (oldest == nullptr) return false;
    v.num_free_draft_blocks += oldest->spec.draft_blocks;
    num_released_draft_blocks_ -= oldest->spec.draft_blocks;  // counted in v already
    release_draft_cache(*oldest);
  }
  kv_ask a;
  a.id = seq.id;
  a.num_total_tokens = positions;
  if (seq.spec.draft_blocks == 0) {
    a.is_admission = true;
    a.num_tokens = positions;
    seq.spec.draft_computed = 0;
  } else {
    a.num_computed_tokens = seq.spec.draft_computed;
    a.num_tokens = positions - seq.spec.draft_computed;
  }
  v.num_free_draft_blocks -= std::max(0, needed - seq.spec.draft_blocks);
  seq.spec.draft_blocks = needed;  // what its table covers once granted (on_grant says)
  v.draft_asks.push_back(a);
  return true;
}

void scheduler::release_draft_cache(sequence& seq) {
  if (seq.spec.draft_blocks == 0) return;
  draft_releases_.push_back({seq.id, 0, true});
  num_released_draft_blocks_ += seq.spec.draft_blocks;
  seq.spec.draft_blocks = 0;
  seq.spec.draft_computed = 0;
}

std::unordered_map<seq_id, kv_granted> scheduler::take_draft_grants(const kv_grant& grant) {
  draft_releases_in_flight_.clear();
  std::unordered_map<seq_id, kv_granted> tables;
  const auto lose = [&](seq_id id) {
    if (auto it = seqs_.find(id); it != seqs_.end()) it->second.spec.draft_blocks = it->second.spec.draft_computed = 0;
  };
  for (seq_id id : grant.draft_preempted) lose(id);  // its table went back
  for (const kv_granted& g : grant.draft_grants) {
    if (g.num_tokens <= 0) {
      lose(g.id);
      continue;
    }
    auto it = seqs_.find(g.id);
    if (it == seqs_.end()) continue;  // finished meanwhile: its release is queued
    it->second.spec.draft_blocks = int(g.block_table.size());
    it->second.spec.draft_computed = g.num_computed_tokens;
    tables.emplace(g.id, g);
  }
  draft_asked_.clear();
  return tables;
}

void scheduler::plan_model_draft(sequence& seq, const seq_step& step, std::size_t entry, int num_granted_draft,
                                 const std::unordered_map<seq_id, kv_granted>& draft_tables) {
  const auto it = draft_tables.find(seq.id);
  if (it == draft_tables.end()) return;
  const kv_granted& g = it->second;
  const int end = seq.num_tokens();
  // Its table covers the positions it writes: the catch-up, then every drafted token but the last.
  const int k = std::min({seq.spec.model_draft, num_granted_draft, g.num_computed_tokens + g.num_tokens - end + 1});
  if (k < 1 || step.id != seq.id) return;
  draft_seq work;
  work.id = seq.id;
  work.start_position = seq.spec.draft_computed;
  for (int p = work.start_position; p < end; ++p) work.tokens.push_back(seq.token_at(p));
  work.block_table = g.block_table;
  work.num_draft = k;
  seq.spec.draft_used = ++draft_clock_;
  model_drafts_.push_back({entry, std::move(work)});
}

std::optional<draft_plan> scheduler::take_draft_plan() {
  if (model_drafts_.empty()) return std::nullopt;
  draft_plan out;
  for (const auto& slot : model_drafts_) out.seqs.push_back(slot.work);
  return out;
}

void scheduler::on_drafts(step_plan& plan, result<draft_result> drafts) {
  const auto slots = std::exchange(model_drafts_, {});
  if (!drafts || !pending_ || plan.step_id != pending_->step_id || drafts->tokens.size() != slots.size()) return;
  step_propose_seconds_ += drafts->seconds;  // priced apart from the step, per drafted token
  std::size_t num_drafted = 0;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const model_draft_slot& slot = slots[i];
    const auto& tokens = drafts->tokens[i];
    auto it = seqs_.find(slot.work.id);
    if (tokens.empty() || it == seqs_.end() || slot.entry >= plan.seqs.size()) continue;
    sequence& seq = it->second;
    seq_step& step = plan.seqs[slot.entry];
    if (step.id != seq.id || step.num_draft != 0) continue;
    const int n = std::min(int(tokens.size()), slot.work.num_draft);
    num_drafted += std::size_t(n);
    // It fed the catch-up and every drafted token but the last.
    seq.spec.draft_computed = slot.work.start_position + int(slot.work.tokens.size()) + n - 1;
    step.tokens.insert(step.tokens.end(), tokens.begin(), tokens.begin() + n);
    step.num_draft = n;
    fill_draft_masks(seq, step);
    pending_entry& e = pending_->entries[slot.entry];
    e.num_tokens = int(step.tokens.size());
    e.draft.assign(step.tokens.end() - step.num_draft, step.tokens.end());
  }
  if (num_drafted > 0) {
    const double s = drafts->seconds / double(num_drafted);
    auto [it, is_new] = draft_seconds_.try_emplace(std::string(model_drafter), s);
    if (!is_new) it->second += draft_time_weight * (s - it->second);
  }
}

void scheduler::fill_draft_masks(sequence& seq, seq_step& step) {
  const auto cut = [&](int keep) {
    step.tokens.resize(step.tokens.size() - std::size_t(step.num_draft - keep));
    step.num_draft = keep;
  };
  // Nothing follows a stop token.
  for (int i = 0; i < step.num_draft; ++i) {
    if (is_stop_token(step.draft_token(i), seq.params, config_.eos_token_ids)) {
      cut(i + 1);
      break;
    }
  }
  if (!seq.matcher || seq.reasoning != reasoning_progress::none || step.allowed_tokens.empty()) return;
  // The grammar walks the draft: a token it refuses ends the draft there, a token that
  // completes it too (that one is sampled, not drafted); each kept one gives the next
  // row's mask. The matcher then steps back: it takes tokens only when they are appended.
  grammar_matcher& m = *seq.matcher;
  const std::size_t words = step.allowed_tokens.size();
  std::span<const std::uint64_t> mask = step.allowed_tokens;
  int keep = step.num_draft;
  std::size_t taken = 0;
  for (int i = 0; i < step.num_draft; ++i) {
    const token_id t = step.draft_token(i);
    if (!mask_has(mask, t) || !m.try_accept_token(t)) {
      keep = i;
      // A token the grammar refuses is a refuted guess: it counts against the acceptance.
      seq.spec.estimate_towards(0.0, acceptance_weight);
      break;
    }
    ++taken;
    if (m.is_complete()) {
      keep = i;
      break;
    }
    step.draft_allowed_tokens.resize(std::size_t(i + 1) * words);
    const auto next = std::span(step.draft_allowed_tokens).subspan(std::size_t(i) * words, words);
    m.fill_next_token_mask(next);
    mask = next;
  }
  m.try_rollback(taken);
  cut(keep);
  step.draft_allowed_tokens.resize(std::size_t(keep) * words);
}

void scheduler::take_tokens(sequence& seq, const pending_entry& e, std::span<const sampled_token> tokens,
                            std::vector<seq_event>& events) {
  const int num_drafted = int(e.draft.size());
  const int num_kept = int(tokens.size()) - 1;  // check_result: the draft's first tokens, then one more
  // The draft model's cache holds what it was fed as far as the sequence keeps it.
  seq.spec.draft_computed = std::min(seq.spec.draft_computed, seq.num_tokens() + num_kept);
  // The K/V of the kept drafted tokens are written; those past them are not the sequence's.
  seq.num_computed_tokens += e.num_tokens - num_drafted + num_kept;
  if (num_drafted > 0) {
    seq.spec.num_drafted += num_drafted;
    seq.spec.num_accepted += num_kept;
    for (int i = 0; i < num_kept; ++i) seq.spec.estimate_towards(1.0, acceptance_weight);
    if (num_kept < num_drafted) seq.spec.estimate_towards(0.0, acceptance_weight);
    counters_.num_draft_tokens += std::uint64_t(num_drafted);
    counters_.num_accepted_tokens += std::uint64_t(num_kept);
    ++counters_.num_drafts;
    if (draft_observer_) draft_observer_(num_drafted, num_kept);
  }
  for (const auto& token : tokens) {
    if (append_token(seq, token, events)) return;  // finished: `seq` is gone
  }
}

void scheduler::measure_step(double backend_seconds) {
  measured_step m;
  for (const auto& e : pending_->entries) {
    const int drafted = int(e.draft.size());
    if (e.do_sample) {
      ++m.decode_rows;
      m.draft_rows += drafted;
      m.prompt_rows += e.num_tokens - 1 - drafted;
    } else {
      m.prompt_rows += e.num_tokens;
    }
  }
  m.backend_seconds = backend_seconds;
  m.started_at = step_started_at_;
  m.propose_seconds = step_propose_seconds_;
  measured_ = m;
}

void scheduler::start_step_time() {
  const double now = seconds_now();
  if (measured_ && measured_->backend_seconds > 0.0) {  // a backend that measures nothing teaches nothing
    // Its whole time: scheduling, the KV grant, the backend, applying, the tokens' way out
    // until the next step starts (or until it was applied, when nothing was left to do);
    // at least the backend's (a simulated one).
    const measured_step& m = *measured_;
    const double end = m.continues ? now : m.applied_at;
    const double seconds = std::max(end - m.started_at - m.propose_seconds, m.backend_seconds);
    step_cost_fit_.add(m.prompt_rows, m.decode_rows, m.draft_rows, seconds);
  }
  measured_.reset();
  step_started_at_ = now;
  step_propose_seconds_ = 0.0;
}

bool scheduler::learns_step_cost() const {
  return config_.speculative.learn_row_cost && step_cost_fit_.cost().has_value();
}

step_cost scheduler::step_costs() const {
  if (config_.speculative.learn_row_cost)
    if (auto learned = step_cost_fit_.cost()) return *learned;
  // The configured estimate, in units of a step's fixed cost.
  const double r = config_.speculative.row_cost;
  return {.fixed_seconds = 1.0, .prompt_row_seconds = r, .decode_row_seconds = r, .draft_row_seconds = r};
}

void scheduler::learn_finished(sequence& seq, finish_reason reason) {
  release_draft_cache(seq);
  for (auto& [name, d] : drafters_) d->forget(seq.id);
  if (drafters_.empty() || seq.is_prefill_only() || (reason != finish_reason::stop && reason != finish_reason::length))
    return;
  const auto tokens = seq.all_tokens();
  for (auto& [name, d] : drafters_) d->on_finished(tokens);
}

}  // namespace inflight
