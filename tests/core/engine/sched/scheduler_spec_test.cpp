// Speculative decoding through the scheduler, its KV manager and core's one sampling
// loop (sample_rows): a fake model whose logits depend on what a sequence reads back
// through its block table, drafters that are always right, always wrong or prompt
// lookup, and the same requests run with and without speculation. Any rollback that
// keeps a refuted token's K/V, a block given back too early or a wrong RNG position
// changes the output.

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <regex>

#include "core/engine/sampling/rng.hpp"
#include "core/engine/sampling/sampler.hpp"
#include "core/engine/spec/drafter_plugin.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

constexpr int vocab = 12;
constexpr token_id never_token = vocab - 1;  ///< the model never gives it
constexpr token_id eos = vocab - 2;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return mix64(h ^ (v + 0x9e3779b97f4a7c15ull)); }

/// The model: a fixed table over the last two tokens, nudged by a hash of the whole
/// context (so that a wrong token anywhere in the cache shows in the output); never
/// never_token, and eos only where `may_end` lets it end.
std::vector<float> model_row(std::span<const token_id> context, float noise, bool may_end) {
  std::vector<float> row(vocab);
  const std::size_t n = context.size();
  const std::uint64_t last = mix(n > 1 ? std::uint64_t(context[n - 2]) : 99, std::uint64_t(context[n - 1]));
  std::uint64_t all = 7;
  for (token_id t : context) all = mix(all, std::uint64_t(t));
  for (int t = 0; t < vocab; ++t) {
    const double base = double(mix(last, std::uint64_t(t)) >> 11) * 0x1.0p-53 * 4.0;
    const double nudge = double(mix(all, std::uint64_t(t)) >> 11) * 0x1.0p-53 * noise;
    row[std::size_t(t)] = float(base + nudge);
  }
  row[std::size_t(never_token)] = -100.0f;
  // It ends (when it may) at a length set by its first token: some inside max_tokens.
  const bool ends = may_end && n == std::size_t(12 + 12 * (context[0] % 4));
  row[std::size_t(eos)] = ends ? 10.0f : -100.0f;
  return row;
}

token_id argmax(const std::vector<float>& row) {
  return token_id(std::max_element(row.begin(), row.end()) - row.begin());
}

/// A paged "KV cache" of token ids; each sampled row's logits are model_row over what
/// the sequence reads back, sampled through sample_rows (drafts checked there).
class logit_backend {
 public:
  logit_backend(int num_blocks, int block_size, float noise, bool may_end = false)
      : block_size_(block_size), noise_(noise), may_end_(may_end), kv_(std::size_t(num_blocks * block_size), -1) {}

  /// The time each step reports: fixed_s + row_s per row + sampled_s per sampled row (0:
  /// none, as a fake).
  double fixed_s = 0.0, row_s = 0.0, sampled_s = 0.0;

  result<step_result> execute(const step_plan& plan) {
    std::vector<float> logits;
    for (const auto& s : plan.seqs) {
      const int end = s.start_position + int(s.tokens.size());
      if (int(s.block_table.size()) * block_size_ < end) return make_error(errc::internal, "block table too short");
      for (std::size_t i = 0; i < s.tokens.size(); ++i) kv_[slot(s, s.start_position + int(i))] = s.tokens[i];
      for (int r = 0; r < s.num_sample_rows(); ++r) {
        std::vector<token_id> context;
        for (int p = 0; p <= end - s.num_sample_rows() + r; ++p) {
          if (kv_[slot(s, p)] < 0) return make_error(errc::internal, "read an unwritten KV slot");
          context.push_back(kv_[slot(s, p)]);
        }
        const auto row = model_row(context, noise_, may_end_);
        logits.insert(logits.end(), row.begin(), row.end());
      }
      num_rows += int(s.tokens.size());
      num_draft_rows += s.num_draft;
      step_sampled_rows += s.num_sample_rows();
    }
    ++num_steps;
    shapes.emplace_back(plan.num_tokens() - num_draft_rows, num_draft_rows);
    num_draft_rows = 0;
    step_result out;
    out.step_id = plan.step_id;
    out.backend_seconds = fixed_s + row_s * plan.num_tokens() + sampled_s * step_sampled_rows;
    step_sampled_rows = 0;
    out.tokens = sample_rows(plan, [&](const seq_step& s, std::size_t logit_row, int row) {
      return sample(std::span<const float>(logits).subspan(logit_row * vocab, vocab), s, row);
    });
    return out;
  }

  int num_steps = 0;
  int num_rows = 0;
  std::vector<std::pair<int, int>> shapes;  ///< per step: rows without the drafts, drafted rows

  /// What sequence step `s` reads back at position `pos` (-1: never written).
  token_id read(const seq_step& s, int pos) const { return kv_[slot(s, pos)]; }

 private:
  int num_draft_rows = 0, step_sampled_rows = 0;
  std::size_t slot(const seq_step& s, int pos) const {
    return std::size_t(s.block_table[std::size_t(pos / block_size_)] * block_size_ + pos % block_size_);
  }
  int block_size_;
  float noise_;
  bool may_end_;
  std::vector<token_id> kv_;
};

/// Proposes the model's greedy continuation: every drafted token is kept (greedy).
class oracle_drafter final : public drafter {
 public:
  oracle_drafter(float noise, bool may_end) : noise_(noise), may_end_(may_end) {}
  std::vector<token_id> propose(seq_id, std::span<const token_id> tokens, int k) override {
    std::vector<token_id> context(tokens.begin(), tokens.end()), out;
    for (int i = 0; i < k; ++i) {
      out.push_back(argmax(model_row(context, noise_, may_end_)));
      context.push_back(out.back());
    }
    return out;
  }

 private:
  float noise_;
  bool may_end_;
};

/// Proposes a token the model never gives: every draft is refuted at once.
class wrong_drafter final : public drafter {
 public:
  std::vector<token_id> propose(seq_id, std::span<const token_id>, int k) override {
    return std::vector<token_id>(std::size_t(k), never_token);
  }
};

/// Proposes the model's next token, then one it never gives: half of what it drafts is kept.
class half_drafter final : public drafter {
 public:
  half_drafter(float noise, bool may_end) : oracle_(noise, may_end) {}
  std::vector<token_id> propose(seq_id id, std::span<const token_id> tokens, int k) override {
    auto out = oracle_.propose(id, tokens, std::min(k, 1));
    if (k >= 2) out.push_back(never_token);
    return out;
  }

 private:
  oracle_drafter oracle_;
};

struct run_options {
  std::string method;          ///< empty: no speculation
  int num_spec_tokens = 4;
  float temperature = 0.0f;
  int max_tokens = 40;
  int num_requests = 3;
  int num_blocks = 64;
  int block_size = 4;
  int budget = 64;
  float noise = 0.3f;
  bool may_end = false;
  double row_cost = 0.05;
  bool penalties = false;
  std::shared_ptr<const token_index> grammar;
  double fixed_s = 0.0, row_s = 0.0, sampled_s = 0.0;  ///< the step times the backend reports
  int prompt_len = 0;                                   ///< 0: 6 + id tokens
  bool same_prompt = false;                             ///< every request the first one's prompt
  std::uint64_t seed_base = 1000;                       ///< request id's seed: seed_base + id
  bool learn = true;                   ///< speculative.learn_row_cost
  /// Method "draft": a draft model in the KV owner's draft space of this many blocks,
  /// the same fake model (every draft kept when greedy) or one with other noise.
  int num_draft_blocks = 64;
  std::optional<float> draft_noise;
};

struct run_outcome {
  std::map<seq_id, std::vector<token_id>> tokens;
  std::map<seq_id, finish_reason> reasons;
  std::map<seq_id, std::pair<int, int>> spec;  ///< (drafted, kept) from the finished event
  scheduler_counters counters;
  int num_steps = 0;
  int num_rows = 0;
  int num_free_blocks_after = 0;
  int num_free_draft_blocks_after = 0;
  int num_draft_model_rows = 0;  ///< rows the draft model ran (catch-ups and drafts)
  int num_stale_reads = 0;       ///< known positions where the draft model read or was fed another token
  std::vector<std::pair<int, int>> shapes;
  std::uint64_t num_preemptions = 0;
};

run_outcome run(const run_options& o) {
  scheduler_config config = make_config(o.budget, 8);
  config.eos_token_ids = {eos};
  config.speculative.row_cost = o.row_cost;
  config.speculative.ngram = {1, 3};
  config.speculative.learn_row_cost = o.learn;
  const bool by_model = o.method == "draft";
  step_loop_options options;
  if (by_model) {
    config.speculative.draft_model_context = 10000;
    options.num_draft_blocks = o.num_draft_blocks;
  }
  auto rig = make_scheduler(config, o.num_blocks, o.block_size, load_policy("splitfuse"), options);
  logit_backend draft_model(o.num_draft_blocks, o.block_size, o.draft_noise.value_or(o.noise), o.may_end);
  std::map<seq_id, std::vector<token_id>> prompts;
  run_outcome out;
  // Before each draft step: what the draft model reads back and is fed of a sequence's
  // known tokens is that sequence's (its cache never counts a refuted draft's K/V).
  const step_loop::executor_fn draft_execute = [&](const step_plan& p) {
    for (const auto& d : p.seqs) {
      auto known = prompts.at(d.id);
      known.insert(known.end(), out.tokens[d.id].begin(), out.tokens[d.id].end());
      const int end = int(known.size());
      for (int pos = 0; pos < std::min(d.start_position, end); ++pos)
        out.num_stale_reads += draft_model.read(d, pos) != known[std::size_t(pos)] ? 1 : 0;
      for (int i = 0; i < int(d.tokens.size()) && d.start_position + i < end; ++i)
        out.num_stale_reads += d.tokens[std::size_t(i)] != known[std::size_t(d.start_position + i)] ? 1 : 0;
    }
    return draft_model.execute(p);
  };
  rig.loop().sched().add_drafter("oracle", std::make_unique<oracle_drafter>(o.noise, o.may_end));
  rig.loop().sched().add_drafter("wrong", std::make_unique<wrong_drafter>());
  rig.loop().sched().add_drafter("half", std::make_unique<half_drafter>(o.noise, o.may_end));
  logit_backend backend(o.num_blocks, o.block_size, o.noise, o.may_end);
  backend.fixed_s = o.fixed_s;
  backend.row_s = o.row_s;
  backend.sampled_s = o.sampled_s;
  for (seq_id id = 1; id <= seq_id(o.num_requests); ++id) {
    seq_request r;
    r.id = id;
    const int p = o.same_prompt ? 1 : int(id);
    for (int i = 0; i < (o.prompt_len > 0 ? o.prompt_len : 6 + p); ++i) r.prompt.push_back(token_id((p * 5 + i * 3) % 9));
    r.params.max_tokens = o.max_tokens;
    r.params.temperature = o.temperature;
    if (o.penalties) r.params.frequency_penalty = 0.4f;
    r.params.grammar = o.grammar;
    r.seed = o.seed_base + id;
    r.speculation.method = o.method.empty() ? "off" : o.method;
    r.speculation.num_tokens = o.num_spec_tokens;
    prompts[id] = r.prompt;
    REQUIRE(rig.submit(std::move(r)).has_value());
  }
  for (int guard = 0; rig.has_work() && guard < 10000; ++guard) {
    auto step = rig.step([&](const step_plan& p) { return backend.execute(p); },
                         by_model ? draft_execute : step_loop::executor_fn{});
    REQUIRE(step.has_value());
    REQUIRE(!step->failure);
    REQUIRE(rig.kv().check_invariants().has_value());
    for (const auto& e : step->events) {
      if (e.type == seq_event::kind::token) {
        out.tokens[e.id].push_back(e.token.token);
        CHECK(e.num_generated_tokens == int(out.tokens[e.id].size()));
      } else {
        out.reasons[e.id] = e.reason;
        out.spec[e.id] = {e.num_draft_tokens, e.num_accepted_tokens};
      }
    }
  }
  REQUIRE(!rig.has_work());
  (void)rig.schedule();  // the last releases reach the KV manager
  out.counters = rig.counters();
  out.num_steps = backend.num_steps;
  out.num_rows = backend.num_rows;
  out.shapes = backend.shapes;
  out.num_free_blocks_after = rig.num_free_blocks();
  if (by_model) {
    REQUIRE(rig.loop().totals().num_failed_drafts == 0);
    out.num_free_draft_blocks_after = rig.kv().draft_space()->num_free_blocks();
    out.num_draft_model_rows = draft_model.num_rows;
  }
  out.num_preemptions = rig.num_preemptions();
  return out;
}

}  // namespace

TEST_CASE("speculation: greedy output is token for token the output without it, for every drafter",
          "[core][sched][spec]") {
  run_options plain;
  const auto reference = run(plain);
  REQUIRE(reference.counters.num_draft_tokens == 0);
  REQUIRE(reference.tokens.size() == 3);
  for (const std::string method : {"ngram", "suffix", "oracle", "wrong", "draft"}) {
    INFO(method);
    run_options o = plain;
    o.method = method;
    const auto got = run(o);
    CHECK(got.tokens == reference.tokens);
    CHECK(got.reasons == reference.reasons);
    CHECK(got.num_free_blocks_after == 64);  // refuted drafts' blocks came back
    CHECK(got.counters.num_draft_tokens > 0);
    CHECK(got.counters.num_drafts > 0);
    std::uint64_t drafted = 0, kept = 0;
    for (const auto& [id, dk] : got.spec) drafted += std::uint64_t(dk.first), kept += std::uint64_t(dk.second);
    CHECK(drafted == got.counters.num_draft_tokens);  // the finished events carry each request's share
    CHECK(kept == got.counters.num_accepted_tokens);
    if (method == "oracle" || method == "draft") {  // the draft model is the model itself
      CHECK(got.counters.num_accepted_tokens == got.counters.num_draft_tokens);
      CHECK(got.num_steps * 2 < reference.num_steps);  // several tokens a step
    }
    if (method == "draft") CHECK(got.num_free_draft_blocks_after == 64);
    CHECK(got.num_stale_reads == 0);
    if (method == "wrong") {
      CHECK(got.counters.num_accepted_tokens == 0);
      CHECK(got.num_steps == reference.num_steps);  // a refuted draft still gives its one token
    }
    if (method == "ngram") {  // prompt lookup is right sometimes, and wrong sometimes
      CHECK(got.counters.num_accepted_tokens > 0);
      CHECK(got.counters.num_accepted_tokens < got.counters.num_draft_tokens);
      CHECK(got.num_steps < reference.num_steps);
    }
  }
}

TEST_CASE("speculation: seeded sampling gives the same tokens with and without it",
          "[core][sched][spec]") {
  for (const bool penalties : {false, true}) {
    run_options plain;
    plain.temperature = 1.0f;
    plain.noise = 1.0f;
    plain.penalties = penalties;
    plain.num_requests = 4;
    const auto reference = run(plain);
    for (const std::string method : {"ngram", "oracle", "wrong", "draft"}) {
      INFO(method << " penalties " << penalties);
      run_options o = plain;
      o.method = method;
      const auto got = run(o);
      CHECK(got.tokens == reference.tokens);
      CHECK(got.counters.num_draft_tokens > 0);
      // The greedy continuation is often, not always, what a draw gives.
      if (method == "oracle" || method == "draft") CHECK(got.counters.num_accepted_tokens > 0);
      if (method == "oracle" || method == "draft")
        CHECK(got.counters.num_accepted_tokens < got.counters.num_draft_tokens);
    }
  }
}

TEST_CASE("speculation: sampled tokens after a checked draft follow the model's distribution",
          "[core][sched][spec]") {
  // 6,000 requests of the same prompt, each with its own seed, 3 tokens at temperature 1,
  // every second token checked against a drafted one (the greedy one: what a biased check
  // would favour). The pairs (t1, t2) against P(t1) P(t2 | t1) of the model: a chi-square
  // test over the pairs (cells expected under 5 merged). Keeping a draft whenever it is
  // plausible, or resampling a refuted one from the full distribution, shifts the greedy
  // token's share by tens of points: far past the threshold.
  run_options o;
  o.method = "oracle";
  o.temperature = 1.0f;
  o.noise = 0.0f;  // the model reads the last two tokens only: its distribution is known
  o.same_prompt = true;
  o.max_tokens = 3;
  o.num_requests = 50;
  o.num_blocks = 256;
  o.learn = false;
  o.row_cost = 0.0;  // draft whatever a row costs
  std::map<std::pair<token_id, token_id>, int> seen;
  std::uint64_t num_drafted = 0;
  int num_draws = 0;
  for (int batch = 0; batch < 120; ++batch) {
    o.seed_base = 1000 + std::uint64_t(batch) * 100;
    const auto got = run(o);
    num_drafted += got.counters.num_draft_tokens;
    for (const auto& [id, tokens] : got.tokens) {
      REQUIRE(tokens.size() >= 2);
      ++seen[{tokens[0], tokens[1]}];
      ++num_draws;
    }
  }
  REQUIRE(num_draws == 6000);
  CHECK(num_drafted >= 5000);  // nearly every second token was a checked draft

  std::vector<token_id> prompt;
  for (int i = 0; i < 7; ++i) prompt.push_back(token_id((5 + i * 3) % 9));
  const auto probabilities = [](const std::vector<float>& row) {
    std::vector<double> p(row.size());
    const float top = *std::max_element(row.begin(), row.end());
    double sum = 0.0;
    for (std::size_t t = 0; t < row.size(); ++t) sum += p[t] = std::exp(double(row[t] - top));
    for (double& v : p) v /= sum;
    return p;
  };
  const auto p1 = probabilities(model_row(prompt, 0.0f, false));
  double chi2 = 0.0, merged_expected = 0.0, merged_seen = 0.0;
  int num_cells = 0;
  for (token_id a = 0; a < vocab; ++a) {
    auto context = prompt;
    context.push_back(a);
    const auto p2 = probabilities(model_row(context, 0.0f, false));
    for (token_id b = 0; b < vocab; ++b) {
      const double expected = num_draws * p1[std::size_t(a)] * p2[std::size_t(b)];
      const auto it = seen.find({a, b});
      const double observed = it == seen.end() ? 0.0 : it->second;
      if (expected < 5.0) {
        merged_expected += expected;
        merged_seen += observed;
        continue;
      }
      chi2 += (observed - expected) * (observed - expected) / expected;
      ++num_cells;
    }
  }
  if (merged_expected > 0.0) {
    chi2 += (merged_seen - merged_expected) * (merged_seen - merged_expected) / merged_expected;
    ++num_cells;
  }
  // The chi-square quantile at p = 3e-7 (z = 5, Wilson-Hilferty): a fair sampler fails
  // it about once in three million seeds.
  const double df = num_cells - 1;
  const double critical = df * std::pow(1.0 - 2.0 / (9.0 * df) + 5.0 * std::sqrt(2.0 / (9.0 * df)), 3.0);
  INFO("chi-square " << chi2 << " over " << num_cells << " cells, critical " << critical);
  REQUIRE(num_cells > 20);
  CHECK(chi2 < critical);
}

TEST_CASE("speculation: max_tokens and a stop token inside a kept draft end the output there",
          "[core][sched][spec]") {
  run_options plain;
  plain.may_end = true;
  plain.max_tokens = 23;  // not a multiple of the draft length + 1
  plain.num_requests = 6;
  const auto reference = run(plain);
  bool saw_stop = false, saw_length = false;
  for (const auto& [id, reason] : reference.reasons) {
    saw_stop |= reason == finish_reason::stop;
    saw_length |= reason == finish_reason::length;
  }
  REQUIRE(saw_stop);
  REQUIRE(saw_length);
  run_options o = plain;
  o.method = "oracle";
  const auto got = run(o);
  CHECK(got.tokens == reference.tokens);
  CHECK(got.reasons == reference.reasons);
  for (const auto& [id, tokens] : got.tokens) {
    CHECK(int(tokens.size()) <= 23);
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) CHECK(tokens[i] != eos);  // nothing after the stop
  }
}

TEST_CASE("speculation: a KV pool too small for every draft preempts nobody for them and loses no block",
          "[core][sched][spec]") {
  run_options plain;
  plain.num_requests = 6;
  plain.num_blocks = 40;  // 6 sequences of up to 52 tokens in blocks of 4: preemptions
  plain.max_tokens = 40;
  const auto reference = run(plain);
  REQUIRE(reference.num_preemptions > 0);
  run_options o = plain;
  o.method = "oracle";
  const auto got = run(o);
  CHECK(got.tokens == reference.tokens);
  CHECK(got.num_free_blocks_after == 40);
  CHECK(got.counters.num_accepted_tokens > 0);
}

TEST_CASE("speculation: the budget rule drafts at one stream and not in a step full of rows",
          "[core][sched][spec]") {
  run_options one;
  one.method = "oracle";
  one.num_requests = 1;
  CHECK(run(one).counters.num_draft_tokens > 0);

  // A costly row (row_cost 1: compute-bound): a draft kept with probability g pays in a
  // step of R rows when g > R / (1 + R); with the first estimate (0.7) no step of 3 rows
  // or more drafts, while lone sequences and pairs still do.
  run_options busy = one;
  busy.num_requests = 8;
  busy.row_cost = 1.0;
  const auto got = run(busy);
  int num_busy_steps = 0, num_light_drafts = 0;
  for (const auto& [rows, drafts] : got.shapes) {
    if (rows >= 3) {
      ++num_busy_steps;
      CHECK(drafts == 0);
    } else {
      num_light_drafts += drafts;
    }
  }
  CHECK(num_busy_steps > 10);
  CHECK(num_light_drafts > 0);

  // A draft longer than the budget left is cut to it: 4 sequences of 1 row in a budget
  // of 6 leave 2 draft rows in all per step.
  run_options tight = one;
  tight.num_requests = 4;
  tight.budget = 6;
  tight.row_cost = 0.0;
  auto rig_steps = run(tight);
  CHECK(rig_steps.counters.num_draft_tokens > 0);
  CHECK(rig_steps.num_rows <= rig_steps.num_steps * 6);
}

TEST_CASE("speculation: a request's method must be known and its length bounded", "[core][sched][spec]") {
  auto rig = make_scheduler(make_config(16, 4), 16, 4, load_policy("splitfuse"));
  seq_request r;
  r.id = 1;
  r.prompt = {1, 2, 3};
  r.speculation.method = "eagle9";
  auto refused = rig.submit(r);
  REQUIRE(!refused);
  CHECK(refused.error().message.find("unknown speculative method 'eagle9'") != std::string::npos);
  r.speculation.method = "ngram";
  r.speculation.num_tokens = 99;
  refused = rig.submit(r);
  REQUIRE(!refused);
  CHECK(refused.error().message.find("num_tokens") != std::string::npos);
  r.speculation.num_tokens = 3;
  CHECK(rig.submit(r).has_value());
}

namespace {

/// Bytes of each token: eos and never_token are special (no text).
std::shared_ptr<const grammar_vocab> spec_vocab() {
  std::vector<std::string> bytes = {"a", "b", "c", "ab", "bc", "abc", "x", "ca", "ba", "xx", "", ""};
  return std::make_shared<const grammar_vocab>(std::move(bytes), std::vector<token_id>{eos});
}

}  // namespace

TEST_CASE("speculation: under a grammar, drafts it refuses are cut and the output is the one without drafts",
          "[core][sched][spec][grammar]") {
  const auto vocab = spec_vocab();
  const std::string pattern = "((ab|c)+x){4}";
  auto g = try_compile({grammar_kind::regex, pattern});
  REQUIRE(g.has_value());
  run_options plain;
  plain.grammar = std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*g)), vocab);
  plain.num_requests = 4;
  plain.max_tokens = 60;
  plain.may_end = true;
  for (const float temperature : {0.0f, 1.0f}) {
    plain.temperature = temperature;
    const auto reference = run(plain);
    for (const std::string method : {"ngram", "oracle", "wrong", "draft"}) {
      INFO(method << " temperature " << temperature);
      run_options o = plain;
      o.method = method;
      const auto got = run(o);
      CHECK(got.tokens == reference.tokens);
      CHECK(got.reasons == reference.reasons);
      CHECK(got.num_free_blocks_after == 64);
      for (const auto& [id, tokens] : got.tokens) {
        std::string text;
        for (token_id t : tokens) text += vocab->bytes(t);
        if (got.reasons.at(id) == finish_reason::stop) CHECK(std::regex_match(text, std::regex(pattern)));
      }
      // The grammar refuses every drafted never_token before it is checked: nothing is drafted.
      if (method == "wrong") CHECK(got.counters.num_draft_tokens == 0);
      if (method == "ngram") CHECK(got.counters.num_accepted_tokens > 0);
    }
  }
}

TEST_CASE("speculation: the row cost learned from step times stops drafts where each row costs a step",
          "[core][sched][spec]") {
  run_options o;
  o.method = "ngram";
  o.num_requests = 1;
  o.max_tokens = 300;
  // Reported times 100x a real tiny model's: the scheduler's own time between steps (on
  // this machine's clock, slow under a sanitizer) must not pass for a shared fixed cost.
  o.row_s = 1e-1;  // every row costs the same, nothing is shared: a tiny model
  const auto learned = run(o);
  o.learn = false;  // the configured 0.05: drafts on
  const auto fixed = run(o);
  CHECK(fixed.counters.num_draft_tokens > 100);
  CHECK(learned.counters.num_draft_tokens * 4 < fixed.counters.num_draft_tokens);
  CHECK(learned.tokens == fixed.tokens);

  // A step that mostly reads weights (fixed 20 ms, 0.2 ms a row): drafts go on.
  o.learn = true;
  o.row_s = 2e-2;
  o.fixed_s = 2.0;
  const auto memory_bound = run(o);
  CHECK(memory_bound.counters.num_draft_tokens * 2 > fixed.counters.num_draft_tokens);
}

TEST_CASE("speculation: drafted rows are priced as sampled rows, not as the cheap rows of prompt chunks",
          "[core][sched][spec]") {
  // 2 ms a step, 5 us a prompt row, 1 ms a sampled row (its logits, its attention), and a
  // drafter whose every other token is kept: a draft kept with probability g pays in a step
  // of R decodes when g > R / (2 + R). One stream drafts (1/3); eight never do (0.8) once a
  // few drafts have shown what a sampled row costs. A line through all the rows (prompts of
  // 50 tokens: most rows are cheap) would price a drafted row at a few microseconds and
  // draft on.
  run_options o;
  o.method = "half";
  o.budget = 512;
  o.prompt_len = 50;
  o.num_blocks = 256;
  o.max_tokens = 60;
  o.fixed_s = 2e-1;  // the times above, 100x (as in the test before)
  o.row_s = 5e-4;
  o.sampled_s = 1e-1 - 5e-4;
  o.num_requests = 1;
  CHECK(run(o).counters.num_accepted_tokens > 10);

  o.num_requests = 8;
  const auto busy = run(o);
  int num_busy_steps = 0, num_drafting_busy_steps = 0;
  for (const auto& [rows, drafts] : busy.shapes) {
    if (rows < 8) continue;
    ++num_busy_steps;
    if (drafts > 0) ++num_drafting_busy_steps;
  }
  CHECK(num_busy_steps > 40);
  CHECK(num_drafting_busy_steps <= 3);
}

TEST_CASE("speculation: the draft model drafts in the KV owner's draft space, caught up after refuted drafts",
          "[core][sched][spec]") {
  // The context hash weighs as much as the last two tokens: a draft model that reads one
  // stale token back (a refuted draft's K/V counted as its cache) drafts other tokens.
  run_options plain;
  plain.noise = 3.0f;
  plain.num_requests = 4;
  const auto reference = run(plain);
  run_options o = plain;
  o.method = "draft";
  const auto same = run(o);
  CHECK(same.tokens == reference.tokens);
  CHECK(same.counters.num_draft_tokens > 0);
  CHECK(same.counters.num_accepted_tokens == same.counters.num_draft_tokens);
  CHECK(same.num_free_draft_blocks_after == o.num_draft_blocks);
  int num_tokens = 0;  // every prompt and output token at most once, and the drafted ones
  for (const auto& [id, tokens] : reference.tokens) num_tokens += int(tokens.size()) + 6 + int(id);
  CHECK(same.num_draft_model_rows <= num_tokens + int(same.counters.num_draft_tokens));

  // Another model: some drafts refuted; its cache steps back to what the sequence kept.
  o.draft_noise = 1.0f;
  const auto other = run(o);
  CHECK(other.tokens == reference.tokens);
  CHECK(other.counters.num_accepted_tokens > 0);
  CHECK(other.counters.num_accepted_tokens < other.counters.num_draft_tokens);
  CHECK(other.num_free_draft_blocks_after == o.num_draft_blocks);
  CHECK(other.num_stale_reads == 0);
  CHECK(same.num_stale_reads == 0);

  // A draft space for about one sequence: caches are evicted (least recently used) and
  // caught up again from the start, every draft still kept by the model itself.
  o.draft_noise.reset();
  o.num_draft_blocks = 14;  // one sequence of up to 50 positions in blocks of 4: 13
  const auto small = run(o);
  CHECK(small.tokens == reference.tokens);
  CHECK(small.counters.num_draft_tokens > 0);
  CHECK(small.counters.num_accepted_tokens == small.counters.num_draft_tokens);
  CHECK(small.num_free_draft_blocks_after == 14);
  CHECK(small.num_stale_reads == 0);
  CHECK(small.num_draft_model_rows > same.num_draft_model_rows);  // catch-ups from the start
}

TEST_CASE("speculation: a drafter plugin drafts through the scheduler, the output the one without it",
          "[core][sched][spec]") {
  // The same greedy request twice, the second after the first finished: the test
  // drafter (tests/plugins/inflight_drafter_test_recall.c) recalls the first one's
  // output and drafts it for the second, every drafted token kept.
  const auto run_twice = [](bool with_plugin) {
    scheduler_config config = make_config(64, 4);
    config.speculative.learn_row_cost = false;
    config.speculative.row_cost = 0.0;
    auto rig = make_scheduler(config, 64, 4, load_policy("splitfuse"));
    auto d = plugin_drafter::try_load(test_only_plugin_dir(), "test_recall", vocab);
    INFO((d ? std::string() : d.error().message));
    REQUIRE(d.has_value());
    rig.loop().sched().add_drafter("test_recall", std::move(*d));
    logit_backend backend(64, 4, 0.3f);
    std::vector<std::vector<token_id>> outputs;
    for (seq_id id : {1, 2}) {
      seq_request r;
      r.id = id;
      r.prompt = {3, 1, 4, 1, 5};
      r.params.max_tokens = 20;
      r.params.temperature = 0.0f;
      r.speculation.method = with_plugin ? "test_recall" : "off";
      REQUIRE(rig.submit(std::move(r)).has_value());
      std::vector<token_id> out;
      for (int guard = 0; rig.has_work() && guard < 100; ++guard) {
        auto step = rig.step([&](const step_plan& p) { return backend.execute(p); });
        REQUIRE(step.has_value());
        REQUIRE(!step->failure);
        for (const auto& e : step->events)
          if (e.type == seq_event::kind::token) out.push_back(e.token.token);
      }
      outputs.push_back(out);
    }
    return std::make_pair(outputs, rig.counters());
  };
  const auto [plain, plain_counters] = run_twice(false);
  const auto [drafted, counters] = run_twice(true);
  CHECK(plain_counters.num_draft_tokens == 0);
  CHECK(drafted == plain);
  REQUIRE(plain[0] == plain[1]);
  CHECK(counters.num_draft_tokens >= 12);  // most of the second request's 19 tokens after its first, drafted
  CHECK(counters.num_accepted_tokens == counters.num_draft_tokens);
}
