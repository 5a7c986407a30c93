#include "core/engine/sched/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace inflight {
namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// splitmix64: spreads (engine seed, sequence id) into an independent per-request seed.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t id) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (id + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The hidden output one chunk of an embedding sequence contributes to its pooling.
hidden_output hidden_of(pooling_kind pooling, int start_position, bool is_last) {
  switch (pooling) {
    case pooling_kind::last: return is_last ? hidden_output::last : hidden_output::none;
    case pooling_kind::first: return start_position == 0 ? hidden_output::first : hidden_output::none;
    case pooling_kind::mean: return hidden_output::sum;
  }
  return hidden_output::none;
}

/// How many tokens of `result`, from `from` on, are sequence `id`'s (they come together).
std::size_t num_tokens_of(const step_result& result, std::size_t from, seq_id id) {
  std::size_t n = 0;
  while (from + n < result.tokens.size() && result.tokens[from + n].id == id) ++n;
  return n;
}

template <class Queue>
void erase_id(Queue& queue, seq_id id) {
  auto it = std::find(queue.begin(), queue.end(), id);
  if (it != queue.end()) queue.erase(it);
}

}  // namespace

scheduler::scheduler(const scheduler_config& config, const kv_snapshot& kv, policy pol, clock_fn clock)
    : config_(config), kv_(kv), policy_(std::move(pol)), clock_(std::move(clock)) {
  if (!clock_) clock_ = steady_seconds;
  max_context_ = kv_.num_blocks * kv_.block_size;
  if (config_.max_seq_len > 0) max_context_ = std::min(max_context_, config_.max_seq_len);
}

result<scheduler> scheduler::try_create(const scheduler_config& config, const kv_snapshot& kv,
                                        policy pol, clock_fn clock) {
  if (kv.num_blocks < 1 || kv.block_size < 1)
    return make_error(errc::invalid_argument, "the scheduler needs a KV pool of at least one block");
  if (config.max_num_batched_tokens < 1)
    return make_error(errc::invalid_argument, "max_num_batched_tokens must be at least 1, got " +
                                                  std::to_string(config.max_num_batched_tokens));
  if (config.max_num_seqs < 1)
    return make_error(errc::invalid_argument,
                      "max_num_seqs must be at least 1, got " + std::to_string(config.max_num_seqs));
  if (config.max_seq_len < 0)
    return make_error(errc::invalid_argument, "max_seq_len must not be negative");
  return scheduler(config, kv, std::move(pol), std::move(clock));
}

const sequence* scheduler::find(seq_id id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : &it->second;
}

result<void> scheduler::submit(seq_request request) {
  std::string who = "request " + std::to_string(request.id);
  if (seqs_.contains(request.id))
    return make_error(errc::invalid_argument, who + ": a live sequence already has this id");
  if (request.prompt.empty()) return make_error(errc::invalid_argument, who + ": empty prompt");
  if (auto ok = try_validate(request.params); !ok)
    return make_error(errc::invalid_argument, who + ": " + ok.error().message);
  if (static_cast<int>(request.prompt.size()) > max_context_)
    return make_error(errc::invalid_argument,
                      who + ": prompt has " + std::to_string(request.prompt.size()) +
                          " tokens, the context holds " + std::to_string(max_context_));
  if (!(request.targets.ttft_ms >= 0.0 && request.targets.tpot_ms >= 0.0) ||
      !std::isfinite(request.targets.ttft_ms) || !std::isfinite(request.targets.tpot_ms))
    return make_error(errc::invalid_argument, who + ": latency targets must be finite and not negative");
  if (!(request.timeout_s >= 0.0) || !std::isfinite(request.timeout_s))
    return make_error(errc::invalid_argument, who + ": the timeout must be finite and not negative");
  if (request.arrival && !std::isfinite(*request.arrival))
    return make_error(errc::invalid_argument, who + ": the arrival time must be finite");
  sequence seq;
  seq.id = request.id;
  seq.targets = resolve_targets(request.targets, config_.default_targets);
  seq.prompt = std::move(request.prompt);
  seq.priority = request.priority;
  seq.params = std::move(request.params);
  seq.score_rows = std::move(request.score_rows);
  seq.pooling = request.pooling;
  seq.seed = request.seed.value_or(mix_seed(config_.seed, seq.id));
  seq.cache_salt = std::move(request.cache_salt);
  seq.adapter = request.adapter;
  if (auto ok = resolve_speculation(seq, request.speculation); !ok)
    return make_error(errc::invalid_argument, who + ": " + ok.error().message);
  if (seq.params.grammar && !seq.is_prefill_only()) seq.matcher.emplace(seq.params.grammar);
  if (seq.params.reasoning && !seq.is_prefill_only())
    seq.reasoning = seq.params.reasoning->is_open ? reasoning_progress::thinking : reasoning_progress::awaiting;
  seq.times.arrival = request.arrival.value_or(now());
  seq.timeout_s = request.timeout_s;
  hash_full_blocks(seq);
  waiting_.push_back(seq.id);
  seqs_.emplace(seq.id, std::move(seq));
  ++counters_.num_submitted;
  return {};
}

result<seq_event> scheduler::finish(seq_id id, finish_reason reason, std::optional<error> cause) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return make_error(errc::not_found, "sequence " + std::to_string(id) + " is not live");
  return finish_sequence(it->second, reason, std::move(cause));
}

seq_event scheduler::finish_sequence(sequence& seq, finish_reason reason, std::optional<error> cause) {
  seq_event event;
  event.id = seq.id;
  event.type = seq_event::kind::finished;
  event.reason = reason;
  event.cause = std::move(cause);
  event.num_generated_tokens = seq.num_generated_tokens();
  event.num_cached_tokens = seq.num_cached_tokens;
  seq.times.finished = now();
  event.times = seq.times;
  event.num_draft_tokens = seq.spec.num_drafted;
  event.num_accepted_tokens = seq.spec.num_accepted;
  learn_finished(seq, reason);
  const seq_id id = seq.id;  // `seq` dangles after the erase below
  queue_release(seq, /*is_finished=*/true);
  erase_id(running_, id);
  erase_id(waiting_, id);
  ++counters_.num_finished;
  seqs_.erase(id);
  return event;
}

void scheduler::hash_full_blocks(sequence& seq) {
  // Without hashes the KV manager neither finds a cached prefix nor caches its blocks.
  if (!config_.enable_prefix_caching || !seq.can_share_prefix()) return;
  const int bs = kv_.block_size;
  const int num_full = seq.num_tokens() / bs;
  if (num_full <= seq.num_hashed_blocks) return;
  kv_block_hashes out{seq.id, {}};
  std::vector<token_id> block(static_cast<std::size_t>(bs));
  for (int k = seq.num_hashed_blocks; k < num_full; ++k) {
    for (int i = 0; i < bs; ++i) block[static_cast<std::size_t>(i)] = seq.token_at(k * bs + i);
    // The salt enters the first block; the chain carries it to every later one.
    seq.last_block_hash = k == 0 ? hash_block(nullptr, block, seq.cache_salt)
                                 : hash_block(&seq.last_block_hash, block, {});
    out.hashes.push_back(seq.last_block_hash);
  }
  seq.num_hashed_blocks = num_full;
  new_hashes_.push_back(std::move(out));
}

void scheduler::take_cached_prefixes(const std::vector<kv_cached_prefix>& prefixes) {
  for (seq_id id : waiting_) seqs_.at(id).num_cached_hint = 0;
  for (const auto& c : prefixes) {
    auto it = seqs_.find(c.id);
    if (it == seqs_.end() || it->second.status == seq_status::running) continue;
    // Whole blocks, and never the last token: its logits are needed.
    const int cap = (it->second.num_tokens() - 1) / kv_.block_size * kv_.block_size;
    it->second.num_cached_hint = std::min(c.num_tokens, cap);
  }
}

void scheduler::queue_release(sequence& seq, bool is_finished) {
  releases_.push_back({seq.id, seq.num_computed_tokens, is_finished});
  num_released_blocks_ += seq.num_blocks_held;
  seq.num_blocks_held = 0;
}

double scheduler::seconds_now() { return steady_seconds(); }

result<kv_request> scheduler::schedule() {
  if (phase_ != step_phase::idle)
    return make_error(errc::internal, "schedule() called while step " + std::to_string(next_step_id_) +
                                          " is not applied");
  kv_request request;
  start_step_time();
  if (has_work()) {
    validation v = decide_and_validate(next_step_id_);
    add_drafts(v);
    request.asks = std::move(v.asks);
    request.draft.asks = std::move(v.draft_asks);
    request.victims = victim_order();
    request.fallback = fallback_ask();
  }
  request.new_hashes = std::move(new_hashes_);
  new_hashes_.clear();
  request.releases = std::move(releases_);
  releases_.clear();
  num_released_blocks_ = 0;
  releases_in_flight_ = request.releases;
  request.draft.releases = std::move(draft_releases_);
  draft_releases_.clear();
  num_released_draft_blocks_ = 0;
  draft_releases_in_flight_ = request.draft.releases;
  draft_asked_ = request.draft.asks;
  asked_ = request.asks;
  fallback_ = request.fallback;
  phase_ = step_phase::awaiting_grant;
  return request;
}

result<step_plan> scheduler::on_grant(kv_grant grant) {
  if (phase_ != step_phase::awaiting_grant)
    return make_error(errc::internal, "on_grant() without a pending kv request");
  const std::size_t num_expected = asked_.size() + (grant.is_fallback_used ? 1 : 0);
  if (grant.grants.size() != num_expected || (grant.is_fallback_used && !fallback_))
    return make_error(errc::internal, "kv grant answers " + std::to_string(grant.grants.size()) +
                                          " asks, the request had " + std::to_string(num_expected));
  for (std::size_t i = 0; i < grant.grants.size(); ++i) {
    if (grant.grants[i].id != (i < asked_.size() ? asked_[i] : *fallback_).id)
      return make_error(errc::internal, "kv grant " + std::to_string(i) + " is for sequence " +
                                            std::to_string(grant.grants[i].id) + ", not the one asked");
  }
  if (grant.draft_grants.size() != draft_asked_.size())
    return make_error(errc::internal, "kv grant answers " + std::to_string(grant.draft_grants.size()) +
                                          " draft asks, the request had " + std::to_string(draft_asked_.size()));
  kv_ = std::move(grant.snapshot);
  releases_in_flight_.clear();
  const auto draft_tables = take_draft_grants(grant);
  for (seq_id id : grant.preempted) {
    auto it = seqs_.find(id);
    if (it != seqs_.end() && it->second.status == seq_status::running) preempt(it->second);
  }
  step_plan plan;
  plan.step_id = next_step_id_;
  pending_step pending{plan.step_id, {}};
  model_drafts_.clear();
  for (std::size_t i = 0; i < grant.grants.size(); ++i) {
    const kv_ask& ask = i < asked_.size() ? asked_[i] : *fallback_;
    kv_granted& g = grant.grants[i];
    auto it = seqs_.find(g.id);
    // Finished while the request was out: its release is queued already.
    if (g.num_tokens <= 0 || it == seqs_.end()) continue;
    sequence& seq = it->second;
    if (ask.is_admission) admit(seq, g.num_computed_tokens);
    seq.num_blocks_held = static_cast<int>(g.block_table.size());
    plan.seqs.push_back(make_seq_step(seq, g.num_tokens, std::move(g.block_table)));
    if (seq.adapter) plan.seqs.back().adapter = adapter_index(plan, seq.adapter);
    const auto& step = plan.seqs.back();
    if (seq.spec.model_draft > 0)
      plan_model_draft(seq, step, plan.seqs.size() - 1, g.num_tokens - int(step.tokens.size()), draft_tables);
    const bool is_prefill_end = seq.is_prefill_only() && step.start_position + g.num_tokens == seq.num_tokens();
    pending.entries.push_back({g.id, int(step.tokens.size()), step.do_sample, !step.logit_rows.empty(),
                               step.hidden != hidden_output::none, is_prefill_end,
                               {step.tokens.end() - step.num_draft, step.tokens.end()}});
  }
  take_cached_prefixes(kv_.cached_prefixes);
  for (const kv_ask& ask : asked_)
    if (auto it = seqs_.find(ask.id); it != seqs_.end()) it->second.spec.model_draft = 0;
  if (grant.is_fallback_used)
    reject("policy '" + policy_.name() + "' scheduled nothing that could run while work was waiting: " +
           "the engine runs sequence " + std::to_string(fallback_->id));
  asked_.clear();
  fallback_.reset();
  phase_ = step_phase::idle;
  if (plan.seqs.empty()) return plan;
  ++next_step_id_;
  ++counters_.num_steps;
  pending_ = std::move(pending);
  phase_ = step_phase::awaiting_result;
  return plan;
}

void scheduler::admit(sequence& seq, int num_computed_tokens) {
  erase_id(waiting_, seq.id);
  running_.push_back(seq.id);
  seq.status = seq_status::running;
  seq.num_computed_tokens = num_computed_tokens;
  seq.num_cached_hint = 0;
  if (seq.times.first_scheduled) return;
  seq.times.first_scheduled = now();
  seq.num_cached_tokens = num_computed_tokens;  // the prefix-cache hit
  if (!config_.enable_prefix_caching) return;
  counters_.num_prefix_cache_queries += static_cast<std::uint64_t>(seq.num_tokens());
  counters_.num_prefix_cache_hits += static_cast<std::uint64_t>(num_computed_tokens);
}

int scheduler::adapter_index(step_plan& plan, const std::shared_ptr<const lora_adapter>& adapter) {
  const auto it = std::find(plan.adapters.begin(), plan.adapters.end(), adapter);
  if (it != plan.adapters.end()) return int(it - plan.adapters.begin());
  plan.adapters.push_back(adapter);
  return int(plan.adapters.size()) - 1;
}

seq_step scheduler::make_seq_step(sequence& seq, int num_tokens, std::vector<block_id> block_table) {
  seq_step step;
  step.id = seq.id;
  step.start_position = seq.num_computed_tokens;
  step.tokens.reserve(static_cast<std::size_t>(num_tokens));
  // Past the known tokens: the draft it asked for, as far as the grant went.
  const int num_known = std::min(num_tokens, seq.num_tokens() - step.start_position);
  for (int i = 0; i < num_known; ++i) step.tokens.push_back(seq.token_at(step.start_position + i));
  step.num_draft = std::min(num_tokens - num_known, static_cast<int>(seq.spec.draft.size()));
  step.tokens.insert(step.tokens.end(), seq.spec.draft.begin(), seq.spec.draft.begin() + step.num_draft);
  seq.spec.draft.clear();
  num_tokens = num_known;
  step.block_table = std::move(block_table);
  // Sample only when the chunk reaches the end of the known tokens: a recompute of
  // already generated tokens never samples them again. A prefill-only sequence asks
  // for its score rows there instead, or for the hidden states its pooling needs.
  const bool is_last = step.start_position + num_tokens == seq.num_tokens();
  step.do_sample = is_last && !seq.is_prefill_only();
  if (is_last) step.logit_rows = seq.score_rows;
  if (seq.pooling) step.hidden = hidden_of(*seq.pooling, step.start_position, is_last);
  step.params = seq.params;
  step.seed = seq.seed;
  step.sample_index = static_cast<std::uint64_t>(seq.num_generated_tokens());
  step.num_prompt_tokens = seq.num_prompt_tokens();
  if (step.do_sample && seq.params.has_penalties()) step.history = seq.all_tokens();
  if (step.do_sample) fill_token_mask(seq, step);
  if (step.num_draft > 0) fill_draft_masks(seq, step);
  return step;
}

namespace {

void allow_token(std::vector<std::uint64_t>& mask, token_id token) {
  const auto word = static_cast<std::size_t>(token) / 64;
  if (mask.size() <= word) mask.resize(word + 1, 0);
  mask[word] |= std::uint64_t{1} << (static_cast<std::uint64_t>(token) % 64);
}

}  // namespace

void scheduler::fill_token_mask(sequence& seq, seq_step& step) {
  if (seq.reasoning == reasoning_progress::thinking) {
    // The reasoning is free text; once its budget is spent, only its end may follow.
    const reasoning_phase& phase = *seq.params.reasoning;
    if (phase.budget && seq.num_reasoning_tokens >= *phase.budget) allow_token(step.allowed_tokens, phase.end_token);
    return;
  }
  if (!seq.matcher) return;
  const auto start = std::chrono::steady_clock::now();
  step.allowed_tokens.resize(seq.matcher->index().vocab().num_mask_words());
  seq.matcher->fill_next_token_mask(step.allowed_tokens);
  // Before the first token the model may still open its reasoning instead of answering.
  if (seq.reasoning == reasoning_progress::awaiting) allow_token(step.allowed_tokens, seq.params.reasoning->begin_token);
  ++counters_.num_constrained_steps;
  if (mask_observer_)
    mask_observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

result<std::vector<seq_event>> scheduler::apply(const step_result& result) {
  if (!pending_) return make_error(errc::invalid_argument, "apply() without a scheduled step");
  if (result.step_id != pending_->step_id)
    return make_error(errc::invalid_argument, "step result " + std::to_string(result.step_id) +
                                                  " does not match pending step " +
                                                  std::to_string(pending_->step_id));
  if (auto ok = check_result(result); !ok) return std::unexpected(ok.error());
  std::vector<seq_event> events;
  measure_step(result.backend_seconds);
  std::size_t k = 0, r = 0, h = 0;
  for (const auto& e : pending_->entries) {
    std::span<const sampled_token> tokens;
    if (e.do_sample) {
      const std::size_t n = num_tokens_of(result, k, e.id);  // check_result: 1 to draft.size() + 1
      tokens = std::span(result.tokens).subspan(k, n);
      k += n;
    }
    const seq_row_logits* rows = e.has_rows ? &result.rows[r++] : nullptr;
    const seq_hidden* hidden = e.has_hidden ? &result.hidden[h++] : nullptr;
    auto it = seqs_.find(e.id);
    // Finished (cancelled, stopped) while the step ran: its result is dropped.
    if (it == seqs_.end() || it->second.status != seq_status::running) continue;
    if (hidden != nullptr) pool_hidden(it->second, *hidden);
    if (e.do_sample) {
      take_tokens(it->second, e, tokens, events);  // advances num_computed_tokens past what is kept
      continue;
    }
    it->second.num_computed_tokens += e.num_tokens;
    if (e.is_prefill_end) events.push_back(finish_prefill_only(it->second, rows));  // blocks go back next request
  }
  pending_.reset();
  phase_ = step_phase::idle;
  if (measured_) {
    measured_->applied_at = seconds_now();
    measured_->continues = has_work();
  }
  return events;
}

void scheduler::pool_hidden(sequence& seq, const seq_hidden& hidden) const {
  if (seq.pooling != pooling_kind::mean || seq.pooled.size() != hidden.values.size()) {
    seq.pooled = hidden.values;  // first / last: the one state; mean: its first chunk
    return;
  }
  for (std::size_t i = 0; i < hidden.values.size(); ++i) seq.pooled[i] += hidden.values[i];
}

seq_event scheduler::finish_prefill_only(sequence& seq, const seq_row_logits* rows) {
  std::vector<float> embedding = std::move(seq.pooled);
  if (seq.pooling == pooling_kind::mean) {
    for (float& v : embedding) v /= float(seq.num_prompt_tokens());
  }
  seq_event event = finish_sequence(seq, finish_reason::stop, {});
  if (rows != nullptr) event.row_logits = rows->values;
  event.embedding = std::move(embedding);
  return event;
}

result<void> scheduler::check_result(const step_result& result) const {
  std::size_t num_samples = 0, num_rows = 0, num_hidden = 0;
  for (const auto& e : pending_->entries) {
    const auto lacks = [&](const char* what) {
      return make_error(errc::invalid_argument, "step result " + std::to_string(result.step_id) + " lacks the " +
                                                    what + " of sequence " + std::to_string(e.id));
    };
    if (e.do_sample) {
      // One token, or a draft's first tokens (those the backend kept) and one more.
      const std::size_t n = num_tokens_of(result, num_samples, e.id);
      if (n == 0) return lacks("sampled token");
      bool is_draft = n <= e.draft.size() + 1;
      for (std::size_t j = 0; is_draft && j + 1 < n; ++j) is_draft = result.tokens[num_samples + j].token == e.draft[j];
      if (!is_draft)
        return make_error(errc::invalid_argument, "step result " + std::to_string(result.step_id) + " has " +
                                                      std::to_string(n) + " tokens of sequence " + std::to_string(e.id) +
                                                      " that do not follow its draft of " +
                                                      std::to_string(e.draft.size()));
      num_samples += n;
    }
    if (e.has_rows && (num_rows >= result.rows.size() || result.rows[num_rows++].id != e.id)) {
      return lacks("score rows");
    }
    if (e.has_hidden && (num_hidden >= result.hidden.size() || result.hidden[num_hidden].id != e.id ||
                         result.hidden[num_hidden++].values.empty())) {
      return lacks("hidden state");
    }
  }
  return {};
}

bool scheduler::append_token(sequence& seq, const sampled_token& token,
                             std::vector<seq_event>& events) {
  // The mask allowed only tokens the grammar takes; a backend that ignored it must not
  // turn into an output that breaks the grammar, nor into a crash.
  const bool is_reasoning = take_reasoning_token(seq, token.token);
  if (!is_reasoning && seq.matcher && !seq.matcher->try_accept_token(token.token)) {
    error cause{errc::internal, "sequence " + std::to_string(seq.id) + ": the sampled token " +
                                    std::to_string(token.token) + " is not allowed by its grammar"};
    events.push_back(finish_sequence(seq, finish_reason::error, std::move(cause)));
    return true;
  }
  seq.generated.push_back(token.token);
  hash_full_blocks(seq);
  double t = now();
  if (!seq.times.first_token) seq.times.first_token = t;
  seq.times.last_token = t;
  seq_event event;
  event.id = seq.id;
  event.type = seq_event::kind::token;
  event.token = token;
  event.is_stop_token = is_stop_token(token.token, seq.params, config_.eos_token_ids);
  event.num_generated_tokens = seq.num_generated_tokens();
  event.times = seq.times;
  const bool ends_on_stop_token = event.is_stop_token;
  events.push_back(std::move(event));
  auto reason = check_stop(seq, ends_on_stop_token);
  if (!reason) return false;
  events.push_back(finish_sequence(seq, *reason, {}));
  return true;
}

/// Moves a sequence through its reasoning phase; true when `token` belongs to the
/// reasoning (its begin, its text or its end), which the grammar does not see.
bool scheduler::take_reasoning_token(sequence& seq, token_id token) const {
  switch (seq.reasoning) {
    case reasoning_progress::none:
      return false;
    case reasoning_progress::awaiting:
      seq.reasoning = token == seq.params.reasoning->begin_token ? reasoning_progress::thinking : reasoning_progress::none;
      return seq.reasoning == reasoning_progress::thinking;
    case reasoning_progress::thinking:
      if (token == seq.params.reasoning->end_token) {
        seq.reasoning = reasoning_progress::none;
      } else {
        ++seq.num_reasoning_tokens;
      }
      return true;
  }
  return false;
}

std::optional<finish_reason> scheduler::check_stop(const sequence& seq, bool ends_on_stop_token) const {
  if (ends_on_stop_token) return finish_reason::stop;
  // Nothing but EOS can follow: the output is complete, no step is spent sampling EOS
  // (an EOS taken under ignore_eos ends the grammar too).
  if (seq.matcher && seq.reasoning == reasoning_progress::none && seq.matcher->is_complete())
    return finish_reason::stop;
  if (seq.num_generated_tokens() >= seq.params.max_tokens) return finish_reason::length;
  if (seq.num_tokens() >= max_context_) return finish_reason::length;
  return std::nullopt;
}

std::vector<seq_event> scheduler::fail_step(const error& cause) {
  std::vector<seq_id> ids;
  if (phase_ == step_phase::awaiting_grant) {
    // The KV manager never applied the request: its releases go out again.
    releases_.insert(releases_.begin(), releases_in_flight_.begin(), releases_in_flight_.end());
    draft_releases_.insert(draft_releases_.begin(), draft_releases_in_flight_.begin(), draft_releases_in_flight_.end());
    for (const auto& a : asked_) ids.push_back(a.id);
    if (fallback_) ids.push_back(fallback_->id);
  } else if (pending_) {
    for (const auto& e : pending_->entries) ids.push_back(e.id);
  }
  releases_in_flight_.clear();
  draft_releases_in_flight_.clear();
  asked_.clear();
  draft_asked_.clear();
  model_drafts_.clear();
  fallback_.reset();
  pending_.reset();
  phase_ = step_phase::idle;
  std::vector<seq_event> events;
  for (seq_id id : ids) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) events.push_back(finish_sequence(it->second, finish_reason::error, cause));
  }
  return events;
}

}  // namespace inflight
