// slo: latency targets first (needs policy ABI version 3: each sequence's TTFT and TPOT
// targets, its arrival and first-token times, and the step's time).
//
// Every step:
//   1. Decodes first, all of them (as splitfuse).
//   2. Protects their time per output token: a running decode with a TPOT target may
//      take until first_token_time + tpot_target x num_generated_tokens for its next
//      token; the step's expected duration stays under the tightest such limit, so
//      the prompt tokens it adds are capped by the step-time estimate
//      (step_estimate.hpp). Where even a step of decodes alone would miss the limit,
//      nothing is capped: holding prompts back could not save the decodes.
//   3. Prompt chunks by slack, least first: slack = arrival + ttft_target - now - the
//      estimated time of the prompt still to compute. Preempted sequences that already
//      produced tokens come first (their recompute delays their next token); then
//      requests that can still meet their TTFT target, by slack; then requests with no
//      target, by arrival; then requests that can no longer meet it, by arrival.
//   4. late = "shed": a request that can no longer meet its TTFT target (negative
//      slack, no token yet) is shed instead: it finishes at once with an error (HTTP
//      429 queue_timeout with Retry-After, "shed by the scheduling policy: ..."), and
//      the engine counts it.
//
// Settings:
//   step_ms           starting estimate of a small (decode) step, ms (default 10)
//   token_ms          starting estimate of the time per token of a compute-bound step,
//                     ms (default 0.05)
//   learn             follow the step times observed (default true)
//   late              "deprioritize" (default) or "shed"
//   tpot_margin       share of a decode's remaining time a step may take (default 0.9)
//   max_chunk_tokens  most tokens one prompt gets in a step (0 = the whole budget)

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "policy_helpers.hpp"
#include "step_estimate.hpp"

namespace {

using namespace inflight::policies;

struct slo_settings {
  double step_ms = 10.0;
  double token_ms = 0.05;
  bool is_learning = true;
  bool is_shedding = false;
  double tpot_margin = 0.9;
  int max_chunk_tokens = 0;
};

struct slo_state {
  slo_settings settings;
  step_estimate estimate;
};

bool parse_ms(const char* text, double& out, double lo, double hi) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v < lo || v > hi) return false;
  out = v;
  return true;
}

inflight_policy_status parse_setting(const inflight_policy_setting& s, slo_settings& out, char* error,
                                     std::size_t capacity) {
  const std::string key = s.key != nullptr ? s.key : "";
  const std::string value = s.value != nullptr ? s.value : "";
  const auto bad = [&](const std::string& expected) {
    return fail(error, capacity, "slo: " + key + " must be " + expected + ", got '" + value + "'");
  };
  if (key == "step_ms") return parse_ms(s.value, out.step_ms, 1e-6, 1e6) ? INFLIGHT_POLICY_OK : bad("a number > 0");
  if (key == "token_ms") return parse_ms(s.value, out.token_ms, 0.0, 1e6) ? INFLIGHT_POLICY_OK : bad("a number >= 0");
  if (key == "tpot_margin")
    return parse_ms(s.value, out.tpot_margin, 0.05, 1.0) ? INFLIGHT_POLICY_OK : bad("a number in [0.05, 1]");
  if (key == "learn") return parse_bool(s.value, out.is_learning) ? INFLIGHT_POLICY_OK : bad("true or false");
  if (key == "max_chunk_tokens")
    return parse_count(s.value, out.max_chunk_tokens) ? INFLIGHT_POLICY_OK : bad("a non-negative integer");
  if (key == "late") {
    if (value != "deprioritize" && value != "shed") return bad("\"deprioritize\" or \"shed\"");
    out.is_shedding = value == "shed";
    return INFLIGHT_POLICY_OK;
  }
  return fail(error, capacity,
              "slo: unknown setting '" + key +
                  "' (known: step_ms, token_ms, learn, late, tpot_margin, max_chunk_tokens)");
}

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings, void** out_state,
                              char* error, std::size_t capacity) {
  slo_settings s;
  for (std::size_t i = 0; i < num_settings; ++i)
    if (parse_setting(settings[i], s, error, capacity) != INFLIGHT_POLICY_OK) return INFLIGHT_POLICY_ERROR;
  *out_state = new slo_state{s, step_estimate(s.step_ms / 1000.0, s.token_ms / 1000.0, s.is_learning)};
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<slo_state*>(state); }

bool is_decode(const inflight_seq_info& seq) {
  return seq.num_tokens_needed == 1 && seq.first_token_time >= 0;
}

/// How a prompt (or a recompute) ranks for the step's chunks; lower first.
enum class urgency { recompute = 0, on_time = 1, untargeted = 2, late = 3 };

struct candidate {
  const inflight_seq_info* seq;
  urgency rank;
  double slack;  // on_time: seconds to spare; else the arrival time (the order within)
};

candidate rank_of(const inflight_seq_info& seq, const step_estimate& estimate, double now) {
  if (seq.first_token_time >= 0) return {&seq, urgency::recompute, seq.arrival_time};
  if (!(seq.ttft_target > 0)) return {&seq, urgency::untargeted, seq.arrival_time};
  const double slack = seq.arrival_time + seq.ttft_target - now - estimate.seconds(seq.num_tokens_needed);
  if (slack < 0) return {&seq, urgency::late, seq.arrival_time};
  return {&seq, urgency::on_time, slack};
}

/// Every sequence with prompt tokens to compute, most urgent first.
std::vector<candidate> prompt_order(const inflight_sched_view* view, const step_estimate& estimate) {
  std::vector<candidate> out;
  for (const auto* seq : by_arrival(view->running, view->num_running))
    if (!is_decode(*seq)) out.push_back(rank_of(*seq, estimate, view->now));
  for (const auto* seq : by_arrival(view->waiting, view->num_waiting)) out.push_back(rank_of(*seq, estimate, view->now));
  std::stable_sort(out.begin(), out.end(), [](const candidate& a, const candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.slack < b.slack;
  });
  return out;
}

/// Longest the step may take and every running decode still meet its TPOT target
/// (infinity when no decode has one).
double step_limit_s(const inflight_sched_view* view, double margin) {
  double limit = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < view->num_running; ++i) {
    const auto& seq = view->running[i];
    if (!is_decode(seq) || !(seq.tpot_target > 0)) continue;
    const double left = seq.first_token_time + seq.tpot_target * seq.num_generated_tokens - view->now;
    limit = std::min(limit, std::max(seq.tpot_target, left) * margin);
  }
  return limit;
}

/// Prompt tokens the step may add to `num_decodes` decode tokens.
int prompt_token_cap(const inflight_sched_view* view, const slo_state& s, int num_decodes) {
  const double limit = step_limit_s(view, s.settings.tpot_margin);
  if (std::isinf(limit)) return INT32_MAX;
  const int fit = s.estimate.max_tokens_within(limit);
  if (fit == 0) return INT32_MAX;  // decodes alone miss it: holding prompts back saves nothing
  return std::max(0, fit - num_decodes);
}

void shed(inflight_decision* decision, const inflight_seq_info& seq) {
  if (decision->num_shed < decision->shed_capacity) decision->shed[decision->num_shed++] = seq.seq_id;
}

inflight_policy_status decide(void* state, const inflight_sched_view* view, inflight_decision* decision) {
  auto* s = static_cast<slo_state*>(state);
  const int chunk = s->settings.max_chunk_tokens > 0 ? s->settings.max_chunk_tokens
                                                     : view->budget.max_num_batched_tokens;
  decision_builder out(view, decision);
  int num_decodes = 0;
  for (const auto* seq : by_arrival(view->running, view->num_running))
    if (is_decode(*seq)) num_decodes += out.add_running(*seq);
  int cap = prompt_token_cap(view, *s, num_decodes);
  for (const candidate& c : prompt_order(view, s->estimate)) {
    if (c.rank == urgency::late && s->settings.is_shedding) {
      shed(decision, *c.seq);
      continue;
    }
    if (out.is_full() || cap <= 0) continue;
    const int n = c.seq->state == INFLIGHT_SEQ_RUNNING ? out.add_running(*c.seq, std::min(chunk, cap))
                                                       : out.add_waiting(*c.seq, std::min(chunk, cap));
    cap -= n;
  }
  s->estimate.observe(view, decision);
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "slo", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &vtable; }
