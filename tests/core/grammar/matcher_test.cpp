#include <catch2/catch.hpp>

#include <bit>
#include <random>
#include <thread>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "tests/core/grammar/grammar_test_util.hpp"
#include "tests/core/grammar/schema_validator.hpp"

using namespace inflight;
using namespace inflight::grammar_test;

namespace {

const char* const person_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "kind": {"enum": ["a", "b", 3, null]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "score": {"type": "number"},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "kind"],
  "additionalProperties": false
})";

const char* const tree_schema = R"({
  "$defs": {"node": {"type": "object",
    "properties": {"id": {"type": "integer"}, "label": {"type": "string", "pattern": "^[a-z]{1,4}$"},
                   "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
    "required": ["id"], "additionalProperties": false}},
  "$ref": "#/$defs/node"
})";

const char* const mixed_schema = R"({
  "type": "array",
  "prefixItems": [{"type": "string", "format": "date"}, {"anyOf": [{"type": "null"}, {"type": "number", "minimum": -5, "maximum": 5}]}],
  "items": {"type": "object", "properties": {"k": {"const": "v"}}, "additionalProperties": {"type": "boolean"}},
  "minItems": 2, "maxItems": 4
})";

std::shared_ptr<const token_index> index_of(std::shared_ptr<const grammar> g, std::shared_ptr<const grammar_vocab> v) {
  return std::make_shared<const token_index>(std::move(g), std::move(v));
}

}  // namespace

TEST_CASE("matcher: the token mask equals the brute force over random walks", "[core][grammar]") {
  auto vocab = synthetic_vocab(300, 1);
  const std::vector<std::pair<const char*, std::shared_ptr<const grammar>>> grammars{
      {"person", must(grammar_from_json_schema(person_schema))},
      {"tree", must(grammar_from_json_schema(tree_schema))},
      {"mixed", must(grammar_from_json_schema(mixed_schema))},
      {"any json", must(grammar_from_json_schema("{}"))},
      {"gbnf", must(grammar_from_gbnf("root ::= expr\nexpr ::= expr (\"+\" | \"*\") term | term\n"
                                      "term ::= [0-9]+ | \"(\" expr \")\" | \"\\\"\" [^\"]* \"\\\"\""))},
      {"regex", must(grammar_from_regex(R"((\{"[a-z]+": \d{1,3}\}|null|"[^"\\]{0,5}")( ,)?)"))},
      {"choice", must(grammar_from_choices(std::vector<std::string>{"{\"", "{\"a", "{\"ab\":", "true", "\""}))},
  };
  std::mt19937_64 rng(42);
  std::size_t num_checks = 0;
  for (const auto& [name, g] : grammars) {
    INFO("grammar " << name);
    auto index = index_of(g, vocab);
    for (int walk = 0; walk < 6; ++walk) {
      grammar_matcher m(index);
      auto gen = generate(m, rng, true, 0.3, 40, 200);
      num_checks += gen.num_mask_checks;
    }
  }
  CHECK(num_checks > 300);
}

TEST_CASE("matcher: random generation under a schema always gives valid JSON", "[core][grammar]") {
  auto vocab = synthetic_vocab(400, 2);
  for (const char* text : {person_schema, tree_schema, mixed_schema}) {
    const auto schema_json = nlohmann::json::parse(text);
    schema_validator validator(schema_json);
    auto index = index_of(must(grammar_from_json_schema(text)), vocab);
    std::mt19937_64 rng(std::hash<std::string>{}(text));
    int num_finished = 0;
    for (int round = 0; round < 40; ++round) {
      grammar_matcher m(index);
      auto gen = generate(m, rng, round < 4, 0.5, 50, 3000);
      if (!gen.is_finished) continue;
      ++num_finished;
      INFO("schema " << text << "\noutput " << gen.text);
      const auto parsed = nlohmann::json::parse(clamp_exponents(gen.text), nullptr, false);
      REQUIRE_FALSE(parsed.is_discarded());
      CHECK(validator.valid(parsed));
    }
    CHECK(num_finished >= 35);
  }
}

TEST_CASE("matcher: tokens are taken whole or not at all, EOS only at an end", "[core][grammar]") {
  auto vocab = std::make_shared<const grammar_vocab>(
      std::vector<std::string>{"{\"", "a", "\":", " 1", "}", "1}", "", "x", "a\": 1}"}, std::vector<token_id>{6});
  auto index = index_of(must(grammar_from_json_schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})")),
                        vocab);
  grammar_matcher m(index);
  const auto before = m.next_token_mask();
  CHECK(mask_has(before, 0));   // {"
  CHECK_FALSE(mask_has(before, 7));
  CHECK_FALSE(mask_has(before, 6));  // EOS: nothing is complete yet
  CHECK_FALSE(m.try_accept_token(7));
  CHECK_FALSE(m.try_accept_token(6));
  CHECK(m.next_token_mask() == before);  // a refused token changes nothing
  REQUIRE(m.try_accept_token(0));
  REQUIRE(m.try_accept_token(1));
  auto mid = m.next_token_mask();
  CHECK(mask_has(mid, 2));
  CHECK_FALSE(mask_has(mid, 4));
  REQUIRE(m.try_accept_token(2));
  REQUIRE(m.try_accept_token(3));
  CHECK_FALSE(m.can_finish());
  REQUIRE(m.try_accept_token(4));
  CHECK(m.can_finish());
  CHECK(m.is_complete());
  auto end = m.next_token_mask();
  CHECK(allowed_ids(end, vocab->size()) == std::vector<token_id>{6});
  REQUIRE(m.try_accept_token(6));
  CHECK(m.is_ended());
  CHECK(allowed_ids(m.next_token_mask(), vocab->size()).empty());
  // One token may span the whole rest: "a": 1} after {".
  grammar_matcher m2(index);
  REQUIRE(m2.try_accept_token(0));
  CHECK(mask_has(m2.next_token_mask(), 8));
  REQUIRE(m2.try_accept_token(8));
  CHECK(m2.can_finish());
}

TEST_CASE("matcher: rollback restores the state and the mask", "[core][grammar]") {
  auto vocab = synthetic_vocab(200, 3);
  auto index = index_of(must(grammar_from_json_schema(person_schema)), vocab);
  std::mt19937_64 rng(5);
  for (int round = 0; round < 10; ++round) {
    grammar_matcher m(index);
    std::vector<std::vector<std::uint64_t>> masks;
    std::vector<token_id> taken;
    for (int step = 0; step < 30 && !m.is_ended(); ++step) {
      masks.push_back(m.next_token_mask());
      const auto ids = allowed_ids(masks.back(), vocab->size());
      REQUIRE_FALSE(ids.empty());
      const token_id pick = ids[rng() % ids.size()];
      REQUIRE(m.try_accept_token(pick));
      taken.push_back(pick);
    }
    const std::size_t n = 1 + rng() % taken.size();
    REQUIRE(m.try_rollback(n));
    CHECK(m.num_steps() == taken.size() - n);
    CHECK_FALSE(m.is_ended());
    CHECK(m.next_token_mask() == masks[taken.size() - n]);
    // Taking the same tokens again gives the same masks.
    for (std::size_t i = taken.size() - n; i < taken.size(); ++i) {
      CHECK(m.next_token_mask() == masks[i]);
      REQUIRE(m.try_accept_token(taken[i]));
    }
    CHECK_FALSE(m.try_rollback(taken.size() + 1));
    REQUIRE(m.try_rollback(taken.size()));
    grammar_matcher fresh(index);
    CHECK(m.next_token_mask() == fresh.next_token_mask());
  }
}

TEST_CASE("matcher: accepting raw bytes and reset", "[core][grammar]") {
  auto vocab = synthetic_vocab(50, 4);
  auto index = index_of(must(grammar_from_regex("abc(d|e)")), vocab);
  grammar_matcher m(index);
  CHECK_FALSE(m.try_accept_bytes("abd"));
  REQUIRE(m.try_accept_bytes("ab"));
  REQUIRE(m.try_accept_bytes("c"));
  CHECK_FALSE(m.can_finish());
  const auto mask = m.next_token_mask();
  CHECK(allowed_ids(mask, vocab->size()).size() == 2);  // the single bytes d and e
  CHECK(mask_has(mask, 'd'));
  CHECK(mask_has(mask, 'e'));
  REQUIRE(m.try_rollback(1));
  REQUIRE(m.try_accept_bytes("cd"));
  CHECK(m.can_finish());
  m.reset();
  CHECK(m.num_steps() == 0);
  CHECK(m.try_accept_bytes("abce"));
}

TEST_CASE("token index: inside a JSON string almost every token is decided without the stack", "[core][grammar]") {
  auto vocab = synthetic_vocab(2000, 6);
  auto g = must(grammar_from_json_schema(R"({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]})"));
  auto index = index_of(g, vocab);
  grammar_matcher m(index);
  REQUIRE(m.try_accept_bytes("{\"s\": \"ab"));
  const auto mask = m.next_token_mask();
  CHECK(mask == brute_force_mask(m));
  std::size_t num_uncertain = 0;
  std::size_t num_accepted_by_index = 0;
  const auto& elements = g->elements();
  std::vector<std::uint32_t> positions;
  earley_parser p(*g);
  p.start_at_root();
  for (char c : std::string("{\"s\": \"ab")) REQUIRE(p.try_advance(static_cast<std::uint8_t>(c)));
  for (const auto& it : p.last_set())
    if (elements[it.pos].kind == element_kind::bytes) positions.push_back(it.pos);
  REQUIRE_FALSE(positions.empty());
  for (auto pos : positions) {
    const auto& t = index->tokens_at(pos);
    num_uncertain += t.uncertain.size();
    num_accepted_by_index += t.accepted_ids.size();
    for (std::size_t w = 0; w < t.accepted_bits.size(); ++w) num_accepted_by_index += std::popcount(t.accepted_bits[w]);
  }
  const std::size_t num_allowed = allowed_ids(mask, vocab->size()).size();
  INFO("allowed " << num_allowed << ", uncertain " << num_uncertain << ", accepted by the index " << num_accepted_by_index);
  CHECK(num_allowed > static_cast<std::size_t>(vocab->size()) / 2);
  // Only tokens that close the string and go on (", "} ...) need the stack.
  CHECK(num_uncertain * 10 < num_allowed);
  CHECK(num_accepted_by_index * 10 > num_allowed * 9);
}

TEST_CASE("token index: lists are computed lazily, once, and warm_up computes the rest", "[core][grammar]") {
  auto vocab = synthetic_vocab(100, 8);
  auto index = index_of(must(grammar_from_json_schema(person_schema)), vocab);
  CHECK(index->num_computed() == 0);
  grammar_matcher m(index);
  m.next_token_mask();
  const std::size_t after_one = index->num_computed();
  CHECK(after_one >= 1);
  m.next_token_mask();
  CHECK(index->num_computed() == after_one);
  index->warm_up();
  std::size_t num_bytes_positions = 0;
  for (const auto& el : index->grammar_ref().elements()) num_bytes_positions += el.kind == element_kind::bytes;
  CHECK(index->num_computed() == num_bytes_positions);
}

TEST_CASE("grammar cache: the same content compiles once", "[core][grammar]") {
  auto vocab = synthetic_vocab(50, 9);
  grammar_cache cache(vocab, 2);
  const grammar_spec a{grammar_kind::json_schema, person_schema};
  auto first = cache.try_get(a);
  REQUIRE(first.has_value());
  CHECK(cache.num_misses() == 1);
  auto second = cache.try_get(grammar_spec{grammar_kind::json_schema, std::string(person_schema)});
  REQUIRE(second.has_value());
  CHECK(second->get() == first->get());
  CHECK(cache.num_hits() == 1);
  // Same text, another kind: another entry (and here, an error).
  auto as_regex = cache.try_get({grammar_kind::regex, person_schema});
  CHECK_FALSE(as_regex.has_value());
  CHECK(cache.num_misses() == 2);
  CHECK(hash_of({grammar_kind::regex, "x"}) != hash_of({grammar_kind::gbnf, "x"}));
  // Errors are cached values too.
  const grammar_spec bad{grammar_kind::json_schema, R"({"not": {}})"};
  auto e1 = cache.try_get(bad);
  auto e2 = cache.try_get(bad);
  REQUIRE_FALSE(e1.has_value());
  REQUIRE_FALSE(e2.has_value());
  CHECK(e2.error().message == e1.error().message);
  CHECK(cache.num_hits() == 2);
  // Capacity 2, least recently used out first: inserting `bad` evicted `a`.
  CHECK(cache.num_entries() == 2);
  const std::size_t misses = cache.num_misses();
  REQUIRE(cache.try_get(a).has_value());
  CHECK(cache.num_misses() == misses + 1);
  CHECK(cache.num_entries() == 2);
  REQUIRE_FALSE(cache.try_get(bad).has_value());  // more recent than the regex entry: kept
  CHECK(cache.num_misses() == misses + 1);
}

TEST_CASE("grammar cache: concurrent requests for one schema share one compiled grammar", "[core][grammar]") {
  auto vocab = synthetic_vocab(50, 10);
  grammar_cache cache(vocab);
  const grammar_spec spec{grammar_kind::json_schema, tree_schema};
  std::vector<std::shared_ptr<const token_index>> got(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      auto r = cache.try_get(spec);
      if (r) {
        got[i] = *r;
        grammar_matcher m(got[i]);
        m.next_token_mask();  // lazy index lists from several threads at once
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& p : got) {
    REQUIRE(p != nullptr);
    CHECK(p.get() == got[0].get());
  }
  CHECK(cache.num_entries() == 1);
  CHECK(cache.num_hits() + cache.num_misses() == got.size());
}

namespace {

// A three-word tokenizer whose first token is BOS: leading spaces are dropped after it.
class fake_tokenizer final : public tokenizer {
 public:
  std::vector<token_id> encode(std::string_view, bool) const override { return {}; }
  std::string token_bytes(token_id prev, token_id token) const override {
    static const char* texts[] = {"", " yes", " no", "", "!"};
    std::string t = texts[token];
    if (prev == 0 && !t.empty() && t[0] == ' ') t.erase(0, 1);
    return t;
  }
  std::string piece(token_id) const override { return {}; }
  int vocab_size() const override { return 5; }
  std::optional<token_id> bos_id() const override { return 0; }
  std::vector<token_id> eos_ids() const override { return {3}; }
};

}  // namespace

TEST_CASE("grammar vocab from a tokenizer: mid-text bytes, specials never match, its EOS", "[core][grammar]") {
  fake_tokenizer tok;
  auto vocab = make_grammar_vocab(tok);
  CHECK(vocab->size() == 5);
  CHECK(vocab->bytes(1) == " yes");  // not the after-BOS form
  CHECK(vocab->bytes(0).empty());
  CHECK(vocab->is_eos(3));
  CHECK(vocab->sorted().size() == 3);
  auto index = std::make_shared<const token_index>(must(grammar_from_choices(std::vector<std::string>{" no!"})), vocab);
  grammar_matcher m(index);
  CHECK(allowed_ids(m.next_token_mask(), 5) == std::vector<token_id>{2});
  REQUIRE(m.try_accept_token(2));
  CHECK(allowed_ids(m.next_token_mask(), 5) == std::vector<token_id>{4});
  REQUIRE(m.try_accept_token(4));
  CHECK(allowed_ids(m.next_token_mask(), 5) == std::vector<token_id>{3});
}

TEST_CASE("earley: sets stay the same size through long strings and arrays", "[core][grammar]") {
  // Loops are left-recursive; a right-recursive loop would add an item per repetition.
  auto g = must(grammar_from_json_schema(
      R"({"type": "object", "properties": {"s": {"type": "string"}, "a": {"type": "array", "items": {"type": "integer"}}},
          "required": ["s", "a"]})"));
  earley_parser p(*g);
  p.start_at_root();
  auto feed = [&](std::string_view text) {
    for (char c : text) REQUIRE(p.try_advance(static_cast<std::uint8_t>(c)));
    return p.last_set().size();
  };
  feed("{\"s\": \"");
  const std::size_t in_string = feed("abcdefghij");
  for (int i = 0; i < 300; ++i) feed("abcdefghij");
  CHECK(p.last_set().size() == in_string);
  feed("\", \"a\": [1");
  const std::size_t in_array = feed(", 22");
  for (int i = 0; i < 300; ++i) feed(", 22");
  CHECK(p.last_set().size() == in_array);
  feed("]}");
  CHECK(p.can_finish());
}
