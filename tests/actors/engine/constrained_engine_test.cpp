// Constrained decoding end to end: the real engine (actors, CPU backend, stories260K)
// under a JSON Schema and under a regex, greedy and sampled, n = 2, with and without a
// KV pool small enough to force preemption. The same requests without the grammar are
// run too: a test that passed with the mask ignored would prove nothing.
#include <nlohmann/json.hpp>

#include <regex>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const char* const person_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 5},
    "age": {"type": "integer", "minimum": 1, "maximum": 99},
    "happy": {"type": "boolean"}
  },
  "required": ["name", "age", "happy"]
})";

const char* const sentence_regex = "[A-Z][a-z]{2,6} (is|was) [0-9]{1,2} years old\\.";

/// Code points of UTF-8 text.
std::size_t num_code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_valid_person(const std::string& text) {
  if (!nlohmann::json::accept(text)) return false;
  const auto j = nlohmann::json::parse(text);
  if (!j.is_object() || j.size() != 3) return false;
  if (!j.contains("name") || !j["name"].is_string() || num_code_points(j["name"].get<std::string>()) > 5) return false;
  if (!j.contains("age") || !j["age"].is_number_integer()) return false;
  const auto age = j["age"].get<long long>();
  if (age < 1 || age > 99) return false;
  return j.contains("happy") && j["happy"].is_boolean();
}

bool is_sentence(const std::string& text) { return std::regex_match(text, std::regex(sentence_regex)); }

struct submitted {
  std::shared_ptr<collect_sink> sink;
  bool is_constrained = false;
  bool is_json = false;
};

}  // namespace

TEST_CASE("engine: JSON Schema and regex outputs parse and match, greedy and sampled, n = 2, under preemption",
          "[engine][grammar]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  for (int kv_blocks : {256, 8}) {  // 8 blocks of 16: the twelve requests below preempt each other
    INFO("kv blocks " << kv_blocks);
    auto eng = start_engine(stories_deployment("splitfuse", 64, kv_blocks));
    grammar_cache cache(make_grammar_vocab(*eng->model().tok));
    auto json = cache.try_get({grammar_kind::json_schema, person_schema});
    auto regex = cache.try_get({grammar_kind::regex, sentence_regex});
    REQUIRE(json.has_value());
    REQUIRE(regex.has_value());

    std::vector<submitted> requests;
    for (bool is_json : {true, false}) {
      for (bool is_constrained : {true, false}) {
        // Greedy once, sampled twice (n = 2: each choice its own sequence and matcher).
        for (int k = 0; k < 3; ++k) {
          auto r = greedy_request(*eng, "Once upon a time", 100);
          if (k > 0) {
            r.params.temperature = 1.0f;
            r.seed = 7 + k;
          }
          if (is_constrained) r.params.grammar = is_json ? *json : *regex;
          auto sink = std::make_shared<collect_sink>();
          REQUIRE(eng->submit(r, sink).has_value());
          requests.push_back({sink, is_constrained, is_json});
        }
      }
    }
    for (const auto& r : requests) {
      REQUIRE(r.sink->wait());
      const std::string text = r.sink->text();
      INFO((r.is_json ? "json" : "regex") << (r.is_constrained ? ", constrained: " : ", free: ") << text);
      const bool is_match = r.is_json ? is_valid_person(text) : is_sentence(text);
      if (r.is_constrained) {
        CHECK(r.sink->finish().reason == finish_reason::stop);
        CHECK(is_match);
      } else {
        CHECK(r.sink->finish().reason != finish_reason::error);
        CHECK(!is_match);
      }
    }
    CHECK(all_blocks_return(*eng));
    const auto snap = eng->snapshot();
    if (kv_blocks == 8) CHECK(snap.gauges.num_preemptions > 0);
    CHECK(snap.gauges.num_constrained_steps > 0);
    CHECK(eng->metrics().grammar_mask_seconds.count() == snap.gauges.num_constrained_steps);
    CHECK_THAT(eng->render_metrics(), Catch::Contains("inflight:grammar_constrained_steps_total{"));
  }
}

TEST_CASE("engine: logit_bias steers greedy output, and bad bias or grammar vocabularies are refused",
          "[engine][grammar]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  const auto run = [&](const generate_request& r) {
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng->submit(r, sink).has_value());
    REQUIRE(sink->wait());
    return sink->tokens();
  };
  auto r = greedy_request(*eng, "Once upon a time", 8);
  const auto free = run(r);
  REQUIRE(!free.empty());
  // -100 on the greedy first token: another one comes first.
  r.params.logit_bias = {{free[0], -100.0f}};
  const auto biased = run(r);
  REQUIRE(!biased.empty());
  CHECK(biased[0] != free[0]);
  // +100 on one token: it wins every step.
  const token_id forced = eng->model().tok->encode(" dog", false).back();
  r.params.logit_bias = {{forced, 100.0f}};
  CHECK(run(r) == std::vector<token_id>(8, forced));

  auto bad = greedy_request(*eng, "Once", 4);
  bad.params.logit_bias = {{eng->model().weights->config.vocab_size, 1.0f}};
  CHECK(!eng->submit(bad, std::make_shared<collect_sink>()).has_value());
  bad.params.logit_bias = {{1, 101.0f}};
  CHECK(!eng->submit(bad, std::make_shared<collect_sink>()).has_value());
  // A grammar compiled for another, larger vocabulary.
  std::vector<std::string> bytes(100000, "a");
  grammar_cache other(std::make_shared<const grammar_vocab>(std::move(bytes), std::vector<token_id>{0}));
  auto g = other.try_get({grammar_kind::regex, "a+"});
  REQUIRE(g.has_value());
  bad.params.logit_bias.clear();
  bad.params.grammar = *g;
  const auto refused = eng->submit(bad, std::make_shared<collect_sink>());
  REQUIRE(!refused.has_value());
  CHECK_THAT(refused.error().message, Catch::Contains("vocabulary"));
}
