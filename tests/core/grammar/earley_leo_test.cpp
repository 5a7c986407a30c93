// Leo's optimization in the Earley parser (one step for a chain of tail-call completions)
// against the plain algorithm: the same answers byte by byte, from the root and from
// every grammar position, on grammars with right recursion, bounded repetitions,
// nullable rules, left recursion and ambiguity. And the point of it: inside copy k of a
// bounded repetition a set holds a constant number of items, not k.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using namespace inflight::grammar_test;

namespace {

std::vector<std::shared_ptr<const grammar>> grammars() {
  std::vector<std::shared_ptr<const grammar>> out;
  out.push_back(must(grammar_from_json_schema(
      R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 12}, "n": {"type": "integer"},
          "a": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 4}}, "required": ["s"]})")));
  out.push_back(must(grammar_from_regex("(ab|a)*b{0,7}c?")));
  out.push_back(must(grammar_from_regex("[a-c]{2,9}(x[a-c]{0,5})?")));
  out.push_back(must(grammar_from_gbnf(R"g(root ::= "(" root ")" root | ""
)g")));
  out.push_back(must(grammar_from_gbnf(R"(root ::= item*
item ::= "a" tail | "b"
tail ::= "c" tail | "a" | ""
)")));
  out.push_back(must(grammar_from_gbnf(R"(root ::= list ";"
list ::= list "," x | x
x ::= "a" x | "b" | "ab" x?
)")));
  return out;
}

/// The state a parser shows after each byte: accepted or not, then can_finish,
/// can_continue and (from a position) whether it touched the context.
struct trace {
  std::vector<int> steps;
  friend bool operator==(const trace&, const trace&) = default;
};

trace run(earley_parser& p, const std::string& text, bool from_position) {
  trace t;
  for (char c : text) {
    if (!p.try_advance(static_cast<std::uint8_t>(c))) {
      t.steps.push_back(-1);
      return t;
    }
    t.steps.push_back(1 + 2 * int(p.can_finish()) + 4 * int(p.can_continue()) +
                      8 * int(from_position && p.last_set_touched_context()));
  }
  return t;
}

std::string random_text(std::mt19937& rng, const std::string& alphabet, std::size_t max_len) {
  std::string s;
  const std::size_t n = rng() % (max_len + 1);
  for (std::size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
  return s;
}

/// A text the grammar accepts as a prefix, grown byte by byte at random (so traces go deep).
std::string random_prefix(const grammar& g, std::mt19937& rng, const std::string& alphabet, std::size_t max_len) {
  earley_parser p(g, false);
  p.start_at_root();
  std::string s;
  for (std::size_t i = 0; i < max_len; ++i) {
    std::vector<char> ok;
    for (char c : alphabet) {
      if (p.try_advance(static_cast<std::uint8_t>(c))) {
        ok.push_back(c);
        p.pop_sets(1);
      }
    }
    if (ok.empty()) break;
    const char c = ok[rng() % ok.size()];
    p.try_advance(static_cast<std::uint8_t>(c));
    s.push_back(c);
  }
  return s;
}

}  // namespace

TEST_CASE("earley: Leo's tail-call completions give the plain parser's answers", "[core][grammar]") {
  std::mt19937 rng(21);
  const std::string alphabet = "{}[]\":, sna0123456789-abcx();,";
  int num_grammar = 0;
  for (const auto& g : grammars()) {
    INFO("grammar " << num_grammar++);
    for (int trial = 0; trial < 300; ++trial) {
      const std::string text = trial % 2 ? random_text(rng, alphabet, 24) : random_prefix(*g, rng, alphabet, 40);
      INFO("text '" << text << "'");
      earley_parser leo(*g, true), plain(*g, false);
      leo.start_at_root();
      plain.start_at_root();
      CHECK(run(leo, text, false) == run(plain, text, false));
      // Popping and going on again (token rollback) keeps them equal.
      if (leo.num_sets() > 2) {
        leo.pop_sets(1);
        plain.pop_sets(1);
        CHECK(run(leo, text.substr(text.size() / 2), false) == run(plain, text.substr(text.size() / 2), false));
      }
    }
    // From every byte position, as the token index starts it.
    const auto& elements = g->elements();
    for (std::uint32_t pos = 0; pos < elements.size(); ++pos) {
      if (elements[pos].kind != element_kind::bytes) continue;
      for (int trial = 0; trial < 20; ++trial) {
        const std::string text = random_text(rng, alphabet, 16);
        INFO("position " << pos << ", text '" << text << "'");
        earley_parser leo(*g, true), plain(*g, false);
        leo.start_at(pos);
        plain.start_at(pos);
        CHECK(run(leo, text, true) == run(plain, text, true));
      }
    }
  }
}

TEST_CASE("earley: inside a long bounded string a set stays small", "[core][grammar]") {
  auto g = must(grammar_from_json_schema(R"({"type": "string", "maxLength": 400})"));
  earley_parser leo(*g, true), plain(*g, false);
  leo.start_at_root();
  plain.start_at_root();
  const std::string text = "\"" + std::string(300, 'a');
  for (char c : text) {
    REQUIRE(leo.try_advance(static_cast<std::uint8_t>(c)));
    REQUIRE(plain.try_advance(static_cast<std::uint8_t>(c)));
  }
  INFO("items in the last set: leo " << leo.last_set().size() << ", plain " << plain.last_set().size());
  CHECK(plain.last_set().size() > 300);  // one completion per enclosing copy
  CHECK(leo.last_set().size() < 20);
  CHECK(leo.can_continue());
  REQUIRE(leo.try_advance('"'));
  CHECK(leo.can_finish());
}
