// slo: latency targets first (needs policy ABI version 3: each sequence's TTFT and TPOT
// targets, its arrival and first-token times, and the step's time). It maximizes
// goodput: requests meeting every target, per second.
//
// Every step:
//   1. Decodes first, all of them (as splitfuse).
//   2. Protects their time per output token: a running decode with a TPOT target may
//      take until first_token_time + tpot_target x num_generated_tokens for its next
//      token; the step's expected duration stays under tpot_margin of the tightest such
//      limit, so the prompt tokens it adds are capped by the step-time model
//      (step_estimate.hpp). Where a step of one decode alone would miss it, nothing is
//      capped: no step could save the decodes.
//   3. Prompt chunks, most urgent first:
//      - started prompts (running, or recomputing a preempted sequence's tokens): they
//        hold a seat and blocks, or a client waits for their next token;
//      - requests that can still meet their TTFT target, least slack first (slack =
//        arrival + ttft_target - now - the time of the prompt still to compute). One
//        whose deadline the prompts before it would make it miss goes with the late:
//        served first it would miss, and make the ones behind it miss too;
//      - requests with no target, by arrival;
//      - requests that can no longer meet it, by arrival.
//   4. Admits a new request only while the decode step the running sequences and it
//      make once their prompts are in stays within decode_share of the tightest TPOT
//      target among them: past that every decode misses its target, and a request
//      waiting for a seat costs goodput only if it then misses its TTFT.
//   5. late = "shed": a request that can no longer meet its TTFT target on its own
//      (negative slack, no token yet) is shed instead: it finishes at once with an
//      error (HTTP 429 queue_timeout with Retry-After, "shed by the scheduling policy:
//      ..."), and the engine counts it.
//
// Settings:
//   step_ms           starting estimate of a step of one decode, ms (default 10)
//   token_ms          starting estimate of the time per token of a compute-bound step,
//                     ms (default 0.05)
//   decode_ms         starting estimate of what each decode adds to a step of decodes,
//                     ms (default 0)
//   learn             follow the step times observed (default true)
//   late              "deprioritize" (default) or "shed"
//   tpot_margin       share of a decode's remaining time a step may take (default 0.8)
//   decode_share      share of the tightest TPOT target a step of decodes may take
//                     before admissions wait (default 0.9)
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
  double decode_ms = 0.0;
  bool is_learning = true;
  bool is_shedding = false;
  double tpot_margin = 0.8;
  double decode_share = 0.9;
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
  if (key == "decode_ms")
    return parse_ms(s.value, out.decode_ms, 0.0, 1e6) ? INFLIGHT_POLICY_OK : bad("a number >= 0");
  if (key == "tpot_margin")
    return parse_ms(s.value, out.tpot_margin, 0.05, 1.0) ? INFLIGHT_POLICY_OK : bad("a number in [0.05, 1]");
  if (key == "decode_share")
    return parse_ms(s.value, out.decode_share, 0.05, 1.0) ? INFLIGHT_POLICY_OK : bad("a number in [0.05, 1]");
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
                  "' (known: step_ms, token_ms, decode_ms, learn, late, tpot_margin, decode_share, max_chunk_tokens)");
}

inflight_policy_status create(const inflight_policy_setting* settings, std::size_t num_settings, void** out_state,
                              char* error, std::size_t capacity) {
  slo_settings s;
  for (std::size_t i = 0; i < num_settings; ++i)
    if (parse_setting(settings[i], s, error, capacity) != INFLIGHT_POLICY_OK) return INFLIGHT_POLICY_ERROR;
  *out_state = new slo_state{s, step_estimate(s.step_ms / 1000.0, s.token_ms / 1000.0, s.decode_ms / 1000.0, s.is_learning)};
  return INFLIGHT_POLICY_OK;
}

void destroy(void* state) { delete static_cast<slo_state*>(state); }

bool is_decode(const inflight_seq_info& seq) {
  return seq.num_tokens_needed == 1 && seq.first_token_time >= 0;
}

/// How a prompt (or a recompute) ranks for the step's chunks; lower first.
enum class urgency { started = 0, on_time = 1, untargeted = 2, late = 3 };

struct candidate {
  const inflight_seq_info* seq;
  urgency rank;
  double slack;          // on_time: seconds to spare; else the arrival time (the order within)
  bool is_past = false;  // late on its own (not for the queue ahead of it): may be shed
};

/// How long prompt tokens take while the engine runs the step's decodes: steps of the
/// budget, the decodes' share left to prompts; the last step holds what is left.
class prompt_clock {
 public:
  prompt_clock(const inflight_sched_view* view, const step_estimate& estimate, const step_shape& decodes)
      : estimate_(estimate), decodes_(decodes) {
    per_step_ = std::max(1, view->budget.max_num_batched_tokens - int(decodes_.decodes));
    full_step_s_ = step_s(per_step_);
  }

  /// Seconds until `num_tokens` prompt tokens, served first, are computed.
  double seconds(int num_tokens) const {
    const int full = num_tokens / per_step_, rest = num_tokens % per_step_;
    return full * full_step_s_ + (rest > 0 ? step_s(rest) : 0.0);
  }

 private:
  double step_s(int prompt_tokens) const {
    return estimate_.seconds(decodes_ + step_shape{double(prompt_tokens), 0.0, double(prompt_tokens)});
  }

  const step_estimate& estimate_;
  step_shape decodes_;
  int per_step_ = 1;
  double full_step_s_ = 0;
};

/// A started prompt (running, or recomputing tokens already sent) comes first: it holds
/// a seat and blocks, or a client waiting for its next token. One with no token yet is
/// still `is_past` when late on its own, to be shed.
candidate rank_of(const inflight_seq_info& seq, const prompt_clock& clock, double now) {
  const bool is_started = seq.first_token_time >= 0 || seq.state == INFLIGHT_SEQ_RUNNING;
  if (!(seq.ttft_target > 0) || seq.first_token_time >= 0)
    return {&seq, is_started ? urgency::started : urgency::untargeted, seq.arrival_time};
  const double slack = seq.arrival_time + seq.ttft_target - now - clock.seconds(seq.num_tokens_needed);
  if (is_started) return {&seq, urgency::started, seq.arrival_time, slack < 0};
  if (slack < 0) return {&seq, urgency::late, seq.arrival_time, true};
  return {&seq, urgency::on_time, slack};
}

/// Every sequence with prompt tokens to compute, most urgent first. A request that has
/// slack on its own but not after the prompts before it (the least slack first) goes
/// with the late ones: serving it first would make it miss and the ones behind it too.
std::vector<candidate> prompt_order(const inflight_sched_view* view, const step_estimate& estimate,
                                    const step_shape& decodes) {
  const prompt_clock clock(view, estimate, decodes);
  std::vector<candidate> out;
  for (const auto* seq : by_arrival(view->running, view->num_running))
    if (!is_decode(*seq)) out.push_back(rank_of(*seq, clock, view->now));
  for (const auto* seq : by_arrival(view->waiting, view->num_waiting)) out.push_back(rank_of(*seq, clock, view->now));
  const auto by_urgency = [](const candidate& a, const candidate& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.slack < b.slack;
  };
  std::stable_sort(out.begin(), out.end(), by_urgency);
  int ahead = 0;  // prompt tokens before
  for (candidate& c : out) {
    if (c.rank == urgency::started) ahead += c.seq->num_tokens_needed;
    if (c.rank != urgency::on_time) continue;
    const int need = c.seq->num_tokens_needed;
    if (view->now + clock.seconds(ahead + need) > c.seq->arrival_time + c.seq->ttft_target) {
      c = {c.seq, urgency::late, c.seq->arrival_time};
      continue;
    }
    ahead += need;
  }
  std::stable_sort(out.begin(), out.end(), by_urgency);
  return out;
}

/// Longest the step may take and every running decode still meet its TPOT target
/// (infinity when no decode has one).
double step_limit_s(const inflight_sched_view* view) {
  double limit = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < view->num_running; ++i) {
    const auto& seq = view->running[i];
    if (!is_decode(seq) || !(seq.tpot_target > 0)) continue;
    const double left = seq.first_token_time + seq.tpot_target * seq.num_generated_tokens - view->now;
    limit = std::min(limit, std::max(seq.tpot_target, left));
  }
  return limit;
}

/// The tightest TPOT target of the running sequences (infinity when none has one).
double tightest_tpot_s(const inflight_sched_view* view) {
  double out = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < view->num_running; ++i)
    if (view->running[i].tpot_target > 0) out = std::min(out, view->running[i].tpot_target);
  return out;
}

/// The decode step the running sequences make once their prompts are in: one token
/// each, over their whole context.
step_shape decode_step_of(const inflight_sched_view* view) {
  step_shape out;
  for (std::size_t i = 0; i < view->num_running; ++i) out += decode_shape(view->running[i].num_tokens);
  return out;
}

void shed(inflight_decision* decision, const inflight_seq_info& seq) {
  if (decision->num_shed < decision->shed_capacity) decision->shed[decision->num_shed++] = seq.seq_id;
}

/// The prompt side of one step: the tokens the running decodes' TPOT leaves room for,
/// and the admissions the decodes' future steps leave room for.
class prompt_room {
 public:
  prompt_room(const inflight_sched_view* view, const slo_state& s, const step_shape& decodes)
      : estimate_(s.estimate), step_(decodes), limit_(step_limit_s(view)), decode_share_(s.settings.decode_share),
        tightest_tpot_(tightest_tpot_s(view)), future_decodes_(decode_step_of(view)) {
    // A target no step could meet (even one decode alone misses it) caps nothing:
    // holding prompts back would not save the decodes. The margin is for the others.
    if (estimate_.seconds(decode_shape(0)) > limit_) limit_ = std::numeric_limits<double>::infinity();
    limit_ *= s.settings.tpot_margin;
  }

  /// Prompt tokens of `seq` the step may take.
  int tokens_for(const inflight_seq_info& seq) const {
    return std::isinf(limit_) ? INT32_MAX : estimate_.prompt_tokens_within(step_, seq, limit_);
  }

  /// Whether a waiting `seq` may start: once its prompt is in, the running sequences'
  /// decode step with it stays within decode_share of the tightest TPOT target among
  /// them and it, so that their steps leave time for prompts. The first always may.
  bool may_admit(const inflight_seq_info& seq) const {
    const double tpot = seq.tpot_target > 0 ? std::min(tightest_tpot_, seq.tpot_target) : tightest_tpot_;
    if (future_decodes_.decodes == 0 || std::isinf(tpot)) return true;
    const step_shape joined = decode_shape(seq.num_tokens);
    if (estimate_.seconds(joined) > tpot) return true;  // no batch could meet it
    return estimate_.seconds(future_decodes_ + joined) <= tpot * decode_share_;
  }

  void took(const inflight_seq_info& seq, int n, bool is_admission) {
    step_ += entry_shape(seq, n);
    if (is_admission) {
      future_decodes_ += decode_shape(seq.num_tokens);
      if (seq.tpot_target > 0) tightest_tpot_ = std::min(tightest_tpot_, seq.tpot_target);
    }
  }

 private:
  const step_estimate& estimate_;
  step_shape step_;
  double limit_;
  double decode_share_;
  double tightest_tpot_;
  step_shape future_decodes_;
};

inflight_policy_status decide(void* state, const inflight_sched_view* view, inflight_decision* decision) {
  auto* s = static_cast<slo_state*>(state);
  const int chunk = s->settings.max_chunk_tokens > 0 ? s->settings.max_chunk_tokens
                                                     : view->budget.max_num_batched_tokens;
  decision_builder out(view, decision);
  step_shape decodes;
  for (const auto* seq : by_arrival(view->running, view->num_running))
    if (is_decode(*seq) && out.add_running(*seq) > 0) decodes += entry_shape(*seq, 1);
  prompt_room room(view, *s, decodes);
  for (const candidate& c : prompt_order(view, s->estimate, decodes)) {
    if (c.is_past && s->settings.is_shedding) {
      shed(decision, *c.seq);
      continue;
    }
    if (out.is_full()) continue;
    const bool is_running = c.seq->state == INFLIGHT_SEQ_RUNNING;
    // A preempted sequence that already has tokens held its seat before: it takes it back.
    if (!is_running && c.rank != urgency::started && !room.may_admit(*c.seq)) continue;
    const int cap = std::min(chunk, room.tokens_for(*c.seq));
    if (cap <= 0) continue;
    const int n = is_running ? out.add_running(*c.seq, cap) : out.add_waiting(*c.seq, cap);
    if (n > 0) room.took(*c.seq, n, !is_running);
  }
  s->estimate.observe(view, decision);
  return INFLIGHT_POLICY_OK;
}

const inflight_policy_vtable vtable = {INFLIGHT_POLICY_ABI_VERSION, "slo", create, destroy, decide};

}  // namespace

extern "C" INFLIGHT_POLICY_EXPORT const inflight_policy_vtable* inflight_policy_entry(void) { return &vtable; }
