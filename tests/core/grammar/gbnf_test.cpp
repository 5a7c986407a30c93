#include <catch2/catch.hpp>

#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using grammar_test::accepts;
using grammar_test::is_prefix;
using grammar_test::must;

namespace {

std::string gbnf_error(std::string_view text) {
  auto g = grammar_from_gbnf(text);
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().code == errc::invalid_argument);
  return g.error().message;
}

}  // namespace

TEST_CASE("gbnf: alternatives, sequences and groups match whole strings only", "[core][grammar]") {
  auto g = must(grammar_from_gbnf(R"(root ::= "a" | "b" ("c" | "d") "e")"));
  CHECK(accepts(*g, "a"));
  CHECK(accepts(*g, "bce"));
  CHECK(accepts(*g, "bde"));
  CHECK_FALSE(accepts(*g, ""));
  CHECK_FALSE(accepts(*g, "ab"));
  CHECK_FALSE(accepts(*g, "bc"));
  CHECK_FALSE(accepts(*g, "be"));
  CHECK(is_prefix(*g, "bc"));
  CHECK_FALSE(is_prefix(*g, "c"));
}

TEST_CASE("gbnf: repetition operators count exactly", "[core][grammar]") {
  auto star = must(grammar_from_gbnf(R"(root ::= "x" "a"*)"));
  CHECK(accepts(*star, "x"));
  CHECK(accepts(*star, "xaaaa"));
  CHECK_FALSE(accepts(*star, "xab"));
  auto plus = must(grammar_from_gbnf(R"(root ::= "a"+)"));
  CHECK_FALSE(accepts(*plus, ""));
  CHECK(accepts(*plus, "a"));
  CHECK(accepts(*plus, "aaa"));
  auto opt = must(grammar_from_gbnf(R"(root ::= "a"? "b")"));
  CHECK(accepts(*opt, "b"));
  CHECK(accepts(*opt, "ab"));
  CHECK_FALSE(accepts(*opt, "aab"));
  auto exact = must(grammar_from_gbnf(R"(root ::= "a"{3})"));
  CHECK_FALSE(accepts(*exact, "aa"));
  CHECK(accepts(*exact, "aaa"));
  CHECK_FALSE(accepts(*exact, "aaaa"));
  auto range = must(grammar_from_gbnf(R"(root ::= "a"{2,4})"));
  CHECK_FALSE(accepts(*range, "a"));
  CHECK(accepts(*range, "aa"));
  CHECK(accepts(*range, "aaaa"));
  CHECK_FALSE(accepts(*range, "aaaaa"));
  auto at_least = must(grammar_from_gbnf(R"(root ::= "a"{2,})"));
  CHECK_FALSE(accepts(*at_least, "a"));
  CHECK(accepts(*at_least, "aaaaaaa"));
  auto at_most = must(grammar_from_gbnf(R"(root ::= "a"{,2} "b")"));
  CHECK(accepts(*at_most, "b"));
  CHECK(accepts(*at_most, "aab"));
  CHECK_FALSE(accepts(*at_most, "aaab"));
  auto group = must(grammar_from_gbnf(R"(root ::= ("ab" | "c"){2})"));
  CHECK(accepts(*group, "abc"));
  CHECK(accepts(*group, "cab"));
  CHECK_FALSE(accepts(*group, "ab"));
}

TEST_CASE("gbnf: string literal escapes and UTF-8", "[core][grammar]") {
  auto g = must(grammar_from_gbnf(R"(root ::= "q\"\\\n\t\x41\u00e9\U0001F600" "日")"));
  CHECK(accepts(*g, "q\"\\\n\tA\xC3\xA9\xF0\x9F\x98\x80日"));
  CHECK_FALSE(accepts(*g, "q\"\\\n\tA\xE9\xF0\x9F\x98\x80日"));  // é as Latin-1 is not UTF-8
}

TEST_CASE("gbnf: character classes are over code points and emit valid UTF-8", "[core][grammar]") {
  auto g = must(grammar_from_gbnf(R"(root ::= [a-cx] [^"\\]+)"));
  CHECK(accepts(*g, "ab"));
  CHECK(accepts(*g, "x日本é"));
  CHECK_FALSE(accepts(*g, "d1"));
  CHECK_FALSE(accepts(*g, "a\""));
  CHECK_FALSE(accepts(*g, "a\\"));
  CHECK_FALSE(accepts(*g, "a\xFF"));          // not UTF-8
  CHECK_FALSE(accepts(*g, "a\xED\xA0\x80"));  // a UTF-8-encoded surrogate
  CHECK_FALSE(accepts(*g, "a\xC0\xAF"));      // overlong
  auto dot = must(grammar_from_gbnf("root ::= . .\n"));
  CHECK(accepts(*dot, "日x"));
  CHECK(accepts(*dot, "\xF0\x9F\x98\x80\n"));
  CHECK_FALSE(accepts(*dot, "日"));
  CHECK_FALSE(accepts(*dot, "abc"));
  auto escaped = must(grammar_from_gbnf(R"(root ::= [\x00-\x1F\]\-]+)"));
  CHECK(accepts(*escaped, "\x01]-\x1F"));
  CHECK_FALSE(accepts(*escaped, " "));
  auto multi = must(grammar_from_gbnf(R"(root ::= [α-ω]+)"));
  CHECK(accepts(*multi, "αβω"));
  CHECK_FALSE(accepts(*multi, "αΩ"));
}

TEST_CASE("gbnf: recursion, left recursion, comments and multi-line rules", "[core][grammar]") {
  auto g = must(grammar_from_gbnf(R"gbnf(
# arithmetic, left-recursive as written in textbooks
root   ::= expr
expr   ::= expr "+" term   # left recursion
         | term
term   ::= factor ( "*" factor )*
factor ::= [0-9]+ | "(" expr ")"
)gbnf"));
  CHECK(accepts(*g, "1"));
  CHECK(accepts(*g, "1+2*3"));
  CHECK(accepts(*g, "(1+2)*((3))+42"));
  CHECK_FALSE(accepts(*g, "1+"));
  CHECK_FALSE(accepts(*g, "(1+2"));
  CHECK_FALSE(accepts(*g, "1++2"));
  CHECK(is_prefix(*g, "((1+"));
  auto nested = must(grammar_from_gbnf("root ::= (\n  \"a\"\n  | \"b\"\n)+ end\nend ::= \"!\""));
  CHECK(accepts(*nested, "abba!"));
  CHECK_FALSE(accepts(*nested, "!"));
}

TEST_CASE("gbnf: a JSON grammar written in GBNF", "[core][grammar]") {
  auto g = must(grammar_from_gbnf(R"gbnf(
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)gbnf"));
  CHECK(accepts(*g, R"({"a": [1, -2.5e+3, true, null], "b\"c": {"d": "\u00e9日本"}})"));
  CHECK(accepts(*g, "[ ]"));
  CHECK_FALSE(accepts(*g, R"({"a" 1})"));
  CHECK_FALSE(accepts(*g, "[01]"));
  CHECK_FALSE(accepts(*g, R"("\x")"));
}

TEST_CASE("gbnf: errors name what is wrong", "[core][grammar]") {
  CHECK_THAT(gbnf_error("root ::= foo"), Catch::Contains("'foo' is not defined"));
  CHECK_THAT(gbnf_error("start ::= \"a\""), Catch::Contains("no 'root' rule"));
  CHECK_THAT(gbnf_error("root ::= \"abc"), Catch::Contains("unterminated string literal"));
  CHECK_THAT(gbnf_error("root ::= [abc"), Catch::Contains("unterminated character class"));
  CHECK_THAT(gbnf_error("root ::= (\"a\""), Catch::Contains("expected ')'"));
  CHECK_THAT(gbnf_error("root ::= \"a\"\nroot ::= \"b\""), Catch::Contains("defined twice"));
  CHECK_THAT(gbnf_error("root ::= <think>"), Catch::Contains("not supported"));
  CHECK_THAT(gbnf_error("root ::= \"a\"{3,2}"), Catch::Contains("out of order"));
  CHECK_THAT(gbnf_error("root ::= [z-a]"), Catch::Contains("out of order"));
  CHECK_THAT(gbnf_error("root ::= \"\\q\""), Catch::Contains("unknown escape"));
  CHECK_THAT(gbnf_error("root ::= \"a\"\n  \"b\" ::= x"), Catch::Contains("line 2"));
  // A rule that can never finish: generation under it could never end.
  CHECK_THAT(gbnf_error("root ::= a\na ::= \"x\" a"), Catch::Contains("can never be completed"));
  CHECK_THAT(gbnf_error("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')),
             Catch::Contains("nest deeper"));
}

TEST_CASE("gbnf: helper rules are transparent, named rules used twice are not", "[core][grammar]") {
  auto g = must(grammar_from_gbnf("root ::= item (\",\" item)*\nitem ::= [a-z]+"));
  const auto& rules = g->rules();
  CHECK_FALSE(rules[g->root()].is_transparent);
  int num_transparent = 0;
  for (const auto& r : rules) {
    if (r.name == "item") CHECK_FALSE(r.is_transparent);  // two call sites
    num_transparent += r.is_transparent;
  }
  CHECK(num_transparent >= 2);  // the two loops
  INFO(g->to_text());
  CHECK(accepts(*g, "ab,c,def"));
}

TEST_CASE("gbnf: thousands of rules compile and parse", "[core][grammar]") {
  std::string text = "root ::= r0\n";
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    // r<i> ::= "<letter>" r<i+1> | ""
    text.append("r").append(std::to_string(i)).append(" ::= \"");
    text.push_back(static_cast<char>('a' + i % 26));
    text.append("\" r").append(std::to_string(i + 1)).append(" | \"\"\n");
  }
  text.append("r").append(std::to_string(n)).append(" ::= \"!\"\n");
  auto g = must(grammar_from_gbnf(text));
  std::string all;
  for (int i = 0; i < n; ++i) all += static_cast<char>('a' + i % 26);
  CHECK(accepts(*g, ""));
  CHECK(accepts(*g, "abc"));
  CHECK(accepts(*g, all + "!"));
  CHECK_FALSE(accepts(*g, all + "a"));
  CHECK_FALSE(accepts(*g, "abd"));
}
