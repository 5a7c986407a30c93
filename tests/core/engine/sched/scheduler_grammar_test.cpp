// Constrained decoding in the scheduler: each sequence with a grammar owns a matcher, its
// allowed-token mask travels on its seq_step, sampled tokens advance it, and a complete
// grammar finishes the sequence. The backend here samples through core's pipeline from
// logits that are a function of what the sequence reads back from its KV blocks.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "core/engine/sampling/sampler.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

constexpr token_id eos = 0;

/// 0 is EOS (no text), 15 a special token.
std::shared_ptr<const grammar_vocab> small_vocab() {
  std::vector<std::string> bytes = {"", "a", "b", "c", "ab", "bc", "abc", "x", "cx", "ba", "xx", "y", "z", "zz", "ca", ""};
  return std::make_shared<const grammar_vocab>(std::move(bytes), std::vector<token_id>{eos});
}

std::shared_ptr<const token_index> compile(const std::shared_ptr<const grammar_vocab>& vocab, grammar_kind kind,
                                           const std::string& text) {
  auto g = try_compile({kind, text});
  if (!g) FAIL("compile failed: " << g.error().message);
  return std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*g)), vocab);
}

std::string text_of(const grammar_vocab& vocab, const std::vector<token_id>& tokens) {
  std::string out;
  for (token_id t : tokens) out += vocab.bytes(t);
  return out;
}

bool mask_allows(const std::vector<std::uint64_t>& mask, token_id id) {
  return (mask[static_cast<std::size_t>(id) >> 6] >> (id & 63)) & 1;
}

/// fake_backend's K/V bookkeeping, with a logits row per sampled sequence seeded by the
/// hash of everything the sequence reads back, sampled by core's pipeline (mask included).
class pipeline_backend {
 public:
  pipeline_backend(int num_blocks, int block_size, int vocab)
      : inner_(num_blocks, block_size, 1 << 30), vocab_(vocab) {}

  result<step_result> execute(const step_plan& plan) {
    auto out = inner_.execute(plan);
    if (!out) return out;
    std::size_t k = 0;
    for (const auto& s : plan.seqs) {
      if (!s.do_sample) continue;
      std::mt19937 gen(static_cast<std::uint32_t>(out->tokens[k].token));
      std::normal_distribution<float> dist(0.0f, 2.0f);
      std::vector<float> row(static_cast<std::size_t>(vocab_));
      for (float& x : row) x = dist(gen);
      auto token = sample(row, s);
      token.id = s.id;
      out->tokens[k++] = std::move(token);
    }
    return out;
  }

 private:
  fake_backend inner_;
  int vocab_;
};

struct run_output {
  std::map<seq_id, std::vector<token_id>> tokens;
  std::map<seq_id, finish_reason> reasons;
  std::map<seq_id, std::string> causes;
  std::uint64_t num_preemptions = 0;
  std::uint64_t num_constrained_steps = 0;
  int num_masked_steps = 0;  ///< seq_steps that carried a mask
};

scheduler_config grammar_config(int budget, int max_num_seqs, int max_seq_len) {
  auto c = make_config(budget, max_num_seqs, max_seq_len);
  c.eos_token_ids = {eos};
  return c;
}

/// Runs `requests` together to completion; every seq_step's mask is checked against the
/// sequence's grammar (present exactly when it samples under one).
template <class Backend>
run_output run(const std::vector<seq_request>& requests, const scheduler_config& config, int num_blocks,
               Backend& backend) {
  auto s = make_scheduler(config, num_blocks, 4, load_policy("fcfs"));
  run_output r;
  std::map<seq_id, bool> has_grammar;
  for (const auto& req : requests) {
    has_grammar[req.id] = req.params.grammar != nullptr;
    REQUIRE(s.submit(req).has_value());
  }
  for (int step = 0; s.has_work() && step < 5000; ++step) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    check_step_invariants(s, *plan);
    for (const auto& st : plan->seqs) {
      INFO("sequence " << st.id);
      CHECK(st.allowed_tokens.empty() == !(st.do_sample && has_grammar[st.id]));
      if (!st.allowed_tokens.empty()) ++r.num_masked_steps;
    }
    if (plan->seqs.empty()) continue;
    auto res = backend.execute(*plan);
    REQUIRE(res.has_value());
    auto events = s.apply(*res);
    REQUIRE(events.has_value());
    for (const auto& e : *events) {
      if (e.type == seq_event::kind::token) {
        r.tokens[e.id].push_back(e.token.token);
      } else {
        r.reasons[e.id] = e.reason;
        if (e.cause) r.causes[e.id] = e.cause->message;
      }
    }
  }
  REQUIRE(!s.has_work());
  REQUIRE(s.schedule().has_value());  // returns the last releases
  CHECK(s.num_free_blocks() == num_blocks);
  r.num_preemptions = s.num_preemptions();
  r.num_constrained_steps = s.counters().num_constrained_steps;
  return r;
}

seq_request make_request(seq_id id, std::vector<token_id> prompt, std::shared_ptr<const token_index> grammar,
                         float temperature, std::uint64_t seed, int max_tokens = 40) {
  seq_request req;
  req.id = id;
  req.prompt = std::move(prompt);
  req.params.temperature = temperature;
  req.params.max_tokens = max_tokens;
  req.params.grammar = std::move(grammar);
  req.seed = seed;
  return req;
}

/// A backend that plays a script: sequence id -> its tokens, by sample_index.
struct scripted_backend {
  std::map<seq_id, std::vector<token_id>> script;
  std::vector<step_plan> plans;
  result<step_result> execute(const step_plan& plan) {
    plans.push_back(plan);
    step_result out;
    out.step_id = plan.step_id;
    for (const auto& s : plan.seqs) {
      if (!s.do_sample) continue;
      const auto& tokens = script.at(s.id);
      out.tokens.push_back({s.id, tokens.at(static_cast<std::size_t>(s.sample_index)), 0.0f, {}});
    }
    return out;
  }
};

}  // namespace

TEST_CASE("scheduler: grammar outputs match, finish with stop when complete, and differ without the grammar",
          "[core][sched][grammar]") {
  const auto vocab = small_vocab();
  const std::string pattern = "(ab|c){1,5}x";
  const auto index = compile(vocab, grammar_kind::regex, pattern);
  const std::vector<token_id> prompt = {3, 1, 2, 7, 9, 11};
  std::vector<seq_request> requests;
  // n = 2 sampled, one greedy, each with its own matcher; the same three without the grammar.
  requests.push_back(make_request(1, prompt, index, 1.0f, 100));
  requests.push_back(make_request(2, prompt, index, 1.0f, 101));
  requests.push_back(make_request(3, prompt, index, 0.0f, 102));
  for (seq_id id = 4; id <= 6; ++id) {
    auto free = requests[static_cast<std::size_t>(id - 4)];
    free.id = id;
    free.params.grammar.reset();
    requests.push_back(free);
  }
  pipeline_backend backend(64, 4, vocab->size());
  const auto r = run(requests, grammar_config(64, 8, 0), 64, backend);
  const std::regex re(pattern);
  int num_grammar_tokens = 0;
  for (seq_id id = 1; id <= 3; ++id) {
    const auto& tokens = r.tokens.at(id);
    const std::string text = text_of(*vocab, tokens);
    INFO("sequence " << id << ": " << text);
    CHECK(std::regex_match(text, re));
    CHECK(r.reasons.at(id) == finish_reason::stop);
    CHECK(tokens.back() != eos);  // finished on completion, not by sampling EOS
    num_grammar_tokens += static_cast<int>(tokens.size());
  }
  CHECK(r.tokens.at(1) != r.tokens.at(2));  // n = 2: two draws, not one shared state
  for (seq_id id = 4; id <= 6; ++id) {
    const std::string text = text_of(*vocab, r.tokens.at(id));
    INFO("sequence " << id << " (no grammar): " << text);
    CHECK(!std::regex_match(text, re));
  }
  CHECK(r.num_masked_steps == num_grammar_tokens);
  CHECK(r.num_constrained_steps == static_cast<std::uint64_t>(num_grammar_tokens));
}

TEST_CASE("scheduler: grammar state survives preemption and prefix caching (same outputs as alone)",
          "[core][sched][grammar]") {
  const auto vocab = small_vocab();
  const std::string pattern = "(ab|c|ba){8,12}(x|y)";
  const auto index = compile(vocab, grammar_kind::regex, pattern);
  const std::vector<token_id> shared = {3, 1, 2, 7, 9, 11, 12, 13};  // two full blocks shared
  std::vector<seq_request> requests;
  for (seq_id id = 1; id <= 6; ++id) {
    auto prompt = shared;
    prompt.push_back(static_cast<token_id>(1 + id % 5));
    requests.push_back(make_request(id, prompt, index, id % 3 == 0 ? 0.0f : 1.0f, 200 + id));
  }
  // 12 blocks of 4 = 48 tokens for six sequences of 18 to 34 tokens: preemption by recompute.
  pipeline_backend backend(12, 4, vocab->size());
  const auto together = run(requests, grammar_config(16, 6, 48), 12, backend);
  CHECK(together.num_preemptions > 0);
  const std::regex re(pattern);
  for (const auto& req : requests) {
    INFO("sequence " << req.id);
    pipeline_backend alone_backend(64, 4, vocab->size());
    const auto alone = run({req}, grammar_config(64, 1, 48), 64, alone_backend);
    CHECK(together.tokens.at(req.id) == alone.tokens.at(req.id));
    CHECK(together.reasons.at(req.id) == finish_reason::stop);
    CHECK(std::regex_match(text_of(*vocab, together.tokens.at(req.id)), re));
  }
}

TEST_CASE("scheduler: a token the grammar refuses finishes the sequence with an error, blocks freed",
          "[core][sched][grammar]") {
  const auto vocab = small_vocab();
  const auto index = compile(vocab, grammar_kind::regex, "(ab|c){1,5}x");
  scripted_backend backend;
  backend.script[1] = {12};     // "z": outside the grammar (a backend that ignored the mask)
  backend.script[2] = {3, 12};  // "c" then "z"
  backend.script[3] = {12, 12}; // no grammar: anything goes
  std::vector<seq_request> requests = {make_request(1, {1, 2}, index, 0.0f, 1),
                                       make_request(2, {1, 2, 3}, index, 0.0f, 2),
                                       make_request(3, {1}, nullptr, 0.0f, 3, 2)};
  const auto r = run(requests, grammar_config(64, 4, 0), 16, backend);
  CHECK(r.reasons.at(1) == finish_reason::error);
  CHECK(!r.tokens.contains(1));  // the refused token never reaches the output
  CHECK_THAT(r.causes.at(1), Catch::Contains("not allowed by its grammar"));
  CHECK(r.reasons.at(2) == finish_reason::error);
  CHECK(r.tokens.at(2) == std::vector<token_id>{3});
  CHECK(r.reasons.at(3) == finish_reason::length);
  CHECK(r.tokens.at(3) == std::vector<token_id>{12, 12});
}

TEST_CASE("scheduler: EOS, ignore_eos, stop tokens and max_tokens under a grammar", "[core][sched][grammar]") {
  const auto vocab = small_vocab();
  const auto index = compile(vocab, grammar_kind::regex, "a+");  // can finish after "a", never complete
  scripted_backend backend;
  std::vector<seq_request> requests;
  requests.push_back(make_request(1, {2, 3}, index, 0.0f, 1, 3));  // a a a: max_tokens
  backend.script[1] = {1, 1, 1};
  requests.push_back(make_request(2, {2, 3}, index, 0.0f, 2));  // a EOS: stop on EOS
  backend.script[2] = {1, eos};
  requests.push_back(make_request(3, {2, 3}, index, 0.0f, 3));  // ignore_eos: EOS ends the grammar
  requests.back().params.ignore_eos = true;
  backend.script[3] = {1, eos, 1};
  requests.push_back(make_request(4, {2, 3}, index, 0.0f, 4));  // a stop token the grammar allows
  requests.back().params.stop_token_ids = {1};
  backend.script[4] = {1};
  // A long prompt under a small budget: its chunks do not sample and carry no mask.
  std::vector<token_id> long_prompt(30, 2);
  requests.push_back(make_request(5, long_prompt, index, 0.0f, 5, 2));
  backend.script[5] = {1, 1};
  const auto r = run(requests, grammar_config(8, 8, 0), 32, backend);
  CHECK(r.reasons.at(1) == finish_reason::length);
  CHECK(r.tokens.at(1) == std::vector<token_id>{1, 1, 1});
  CHECK(r.reasons.at(2) == finish_reason::stop);
  CHECK(r.tokens.at(2) == std::vector<token_id>{1, eos});
  CHECK(r.reasons.at(3) == finish_reason::stop);
  CHECK(r.tokens.at(3) == std::vector<token_id>{1, eos});
  CHECK(r.reasons.at(4) == finish_reason::stop);
  CHECK(r.tokens.at(4) == std::vector<token_id>{1});
  CHECK(r.reasons.at(5) == finish_reason::length);
  // EOS is allowed exactly when the grammar can finish: not before "a", always after.
  int num_checked = 0;
  for (const auto& plan : backend.plans) {
    for (const auto& st : plan.seqs) {
      if (st.id != 2 || !st.do_sample) continue;
      REQUIRE(!st.allowed_tokens.empty());
      CHECK(mask_allows(st.allowed_tokens, eos) == (st.sample_index > 0));
      CHECK(mask_allows(st.allowed_tokens, 1));
      CHECK(!mask_allows(st.allowed_tokens, 2));
      ++num_checked;
    }
  }
  CHECK(num_checked == 2);
}

TEST_CASE("scheduler: the mask observer sees one fill per constrained sequence-step", "[core][sched][grammar]") {
  const auto vocab = small_vocab();
  const auto index = compile(vocab, grammar_kind::regex, "(ab|c){2}x");
  auto kv = kv_manager::try_create(16, 4);
  REQUIRE(kv.has_value());
  auto sched = scheduler::try_create(grammar_config(64, 4, 0), kv->snapshot(), load_policy("fcfs"), counting_clock());
  REQUIRE(sched.has_value());
  std::vector<double> observed;
  sched->set_mask_observer([&](double seconds) { observed.push_back(seconds); });
  sched_rig s(std::move(*sched), std::move(*kv));
  REQUIRE(s.submit(make_request(1, {1, 2}, index, 0.0f, 1)).has_value());
  REQUIRE(s.submit(make_request(2, {1, 2}, nullptr, 0.0f, 2, 3)).has_value());
  scripted_backend backend;
  backend.script[1] = {4, 3, 7};  // ab c x: complete
  backend.script[2] = {9, 9, 9};
  int num_tokens_1 = 0;
  while (s.has_work()) {
    auto plan = s.schedule();
    REQUIRE(plan.has_value());
    auto res = backend.execute(*plan);
    REQUIRE(res.has_value());
    auto events = s.apply(*res);
    REQUIRE(events.has_value());
    for (const auto& e : *events) {
      if (e.id == 1 && e.type == seq_event::kind::token) ++num_tokens_1;
      if (e.id == 1 && e.type == seq_event::kind::finished) CHECK(e.reason == finish_reason::stop);
    }
  }
  CHECK(num_tokens_1 == 3);
  CHECK(observed.size() == 3);
  CHECK(s.counters().num_constrained_steps == 3);
  for (double seconds : observed) CHECK(seconds >= 0.0);
}
