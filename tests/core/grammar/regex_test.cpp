#include <catch2/catch.hpp>

#include "core/grammar/grammar_cache.hpp"
#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using grammar_test::accepts;
using grammar_test::must;

namespace {

bool regex_accepts(std::string_view pattern, std::string_view text) {
  auto g = grammar_from_regex(pattern);
  if (!g) FAIL("regex '" << pattern << "' failed: " << g.error().message);
  return accepts(*g, text);
}

std::string regex_error(std::string_view pattern) {
  auto g = grammar_from_regex(pattern);
  REQUIRE_FALSE(g.has_value());
  return g.error().message;
}

}  // namespace

TEST_CASE("regex: the whole output must match", "[core][grammar]") {
  CHECK(regex_accepts("abc", "abc"));
  CHECK_FALSE(regex_accepts("abc", "xabc"));
  CHECK_FALSE(regex_accepts("abc", "abcx"));
  CHECK_FALSE(regex_accepts("abc", "ab"));
  CHECK(regex_accepts("^abc$", "abc"));
  CHECK_FALSE(regex_accepts("^abc$", "abc$"));
  CHECK(regex_accepts("a|bc|", ""));
  CHECK(regex_accepts("a|bc|", "bc"));
  CHECK_FALSE(regex_accepts("a|bc", "abc"));
  CHECK(regex_accepts("^a$|^bc$", "bc"));
  CHECK_FALSE(regex_accepts("^a$|^bc$", "abc"));
}

TEST_CASE("regex: classes, dot and shorthand escapes", "[core][grammar]") {
  CHECK(regex_accepts(R"(\d\w\s)", "7_ "));
  CHECK_FALSE(regex_accepts(R"(\d)", "a"));
  CHECK(regex_accepts(R"(\D\W\S)", "a-x"));
  CHECK_FALSE(regex_accepts(R"(\D)", "5"));
  CHECK(regex_accepts("[a-c0-2_]+", "ab2_c0"));
  CHECK_FALSE(regex_accepts("[a-c]", "d"));
  CHECK(regex_accepts("[^a-c]", "日"));
  CHECK_FALSE(regex_accepts("[^a-c]", "b"));
  CHECK(regex_accepts(R"([\d.-]+)", "-1.5"));
  CHECK(regex_accepts(R"([]a])", "]"));
  CHECK(regex_accepts(".", "é"));
  CHECK_FALSE(regex_accepts(".", "\n"));
  CHECK_FALSE(regex_accepts(".", "ab"));
  CHECK(regex_accepts(R"(\.\*\(\)\[\]\{\}\|\\\/\^\$)", ".*()[]{}|\\/^$"));
  CHECK(regex_accepts(R"(\x41\u00e9\n\t)", "A\xC3\xA9\n\t"));
  CHECK(regex_accepts("日本+", "日本本"));
}

TEST_CASE("regex: groups and quantifiers", "[core][grammar]") {
  CHECK(regex_accepts("(ab)+c", "ababc"));
  CHECK_FALSE(regex_accepts("(ab)+c", "c"));
  CHECK(regex_accepts("(?:ab|cd)*", ""));
  CHECK(regex_accepts("(?:ab|cd)*", "cdab"));
  CHECK(regex_accepts("(?<year>\\d{4})-(?P<m>\\d{2})", "2024-05"));
  CHECK(regex_accepts("a{2,3}", "aaa"));
  CHECK_FALSE(regex_accepts("a{2,3}", "a"));
  CHECK_FALSE(regex_accepts("a{2,3}", "aaaa"));
  CHECK(regex_accepts("a{2}", "aa"));
  CHECK_FALSE(regex_accepts("a{2}", "aaa"));
  CHECK(regex_accepts("a{2,}", "aaaaa"));
  CHECK_FALSE(regex_accepts("a{2,}", "a"));
  CHECK(regex_accepts("a+?b*?c??", "aab"));
  CHECK(regex_accepts("(a|b)?{2}", "ab"));  // quantifiers stack
  CHECK(regex_accepts("((a)|(b(c)?))*", "abcbba"));
}

TEST_CASE("regex: unsupported constructs are errors that say so", "[core][grammar]") {
  CHECK_THAT(regex_error(R"((a)\1)"), Catch::Contains("backreferences"));
  CHECK_THAT(regex_error("a(?=b)"), Catch::Contains("lookaround"));
  CHECK_THAT(regex_error("a(?!b)"), Catch::Contains("lookaround"));
  CHECK_THAT(regex_error("(?<=a)b"), Catch::Contains("lookaround"));
  CHECK_THAT(regex_error("(?<!a)b"), Catch::Contains("lookaround"));
  CHECK_THAT(regex_error(R"(\bword\b)"), Catch::Contains("word boundaries"));
  CHECK_THAT(regex_error(R"(\p{L})"), Catch::Contains("Unicode property"));
  CHECK_THAT(regex_error("a++"), Catch::Contains("possessive"));
  CHECK_THAT(regex_error("(?i)abc"), Catch::Contains("inline flags"));
  CHECK_THAT(regex_error("(ab"), Catch::Contains("missing ')'"));
  CHECK_THAT(regex_error("ab)"), Catch::Contains("unbalanced"));
  CHECK_THAT(regex_error("*a"), Catch::Contains("nothing to repeat"));
  CHECK_THAT(regex_error("a$b"), Catch::Contains("'$'"));
  CHECK_THAT(regex_error("a^b"), Catch::Contains("'^'"));
  CHECK_THAT(regex_error("(a$|b)c"), Catch::Contains("'$'"));
  CHECK_THAT(regex_error("(^a)"), Catch::Contains("'^'"));
  CHECK_THAT(regex_error("[a-"), Catch::Contains("unterminated"));
  CHECK_THAT(regex_error("a{5,2}"), Catch::Contains("out of order"));
  CHECK(grammar_from_regex("(a)\\1").error().code == errc::invalid_argument);
  // Nesting is bounded (the parser recurses), and so is the size bounded repetition makes.
  CHECK_THAT(regex_error(std::string(100000, '(') + std::string(100000, ')')), Catch::Contains("nest deeper"));
  CHECK(grammar_from_regex(std::string(200, '(') + "a" + std::string(200, ')')).has_value());
  CHECK_THAT(regex_error("((a{1000}){1000}){1000}"), Catch::Contains("too large"));
}

TEST_CASE("choice: exactly one of the strings", "[core][grammar]") {
  const std::vector<std::string> choices{"yes", "no", "yes please", "日本"};
  auto g = must(grammar_from_choices(choices));
  for (const auto& c : choices) CHECK(accepts(*g, c));
  CHECK_FALSE(accepts(*g, "ye"));
  CHECK_FALSE(accepts(*g, "yes "));
  CHECK_FALSE(accepts(*g, "nono"));
  CHECK_FALSE(accepts(*g, ""));
  CHECK_FALSE(grammar_from_choices({}).has_value());
  auto via_spec = try_compile({grammar_kind::choice, R"(["a", "b\"c"])"});
  REQUIRE(via_spec.has_value());
  CHECK(accepts(*via_spec, "b\"c"));
  CHECK_FALSE(try_compile({grammar_kind::choice, R"(["a", 1])"}).has_value());
  CHECK_FALSE(try_compile({grammar_kind::choice, "not json"}).has_value());
  auto empty_choice = must(grammar_from_choices(std::vector<std::string>{"", "x"}));
  CHECK(accepts(*empty_choice, ""));
  CHECK(accepts(*empty_choice, "x"));
}

TEST_CASE("regex: nested unbounded repetitions collapse into one", "[core][grammar]") {
  CHECK(regex_accepts("a**b", "aab"));
  CHECK(regex_accepts("a**b", "b"));
  CHECK(regex_accepts("a*?b", "aab"));
  // (x*)* and (x+)+ are x* and x+ (the same strings, without the nested ambiguity).
  CHECK(regex_accepts("(a*)*", ""));
  CHECK(regex_accepts("(a*)*", "aaaa"));
  CHECK_FALSE(regex_accepts("(a+)+", ""));
  CHECK(regex_accepts("(a+)+b", "aaab"));
  // (x{2,}){2,} is x{4,}; (x{2,})* keeps its gaps: nothing, or two or more.
  CHECK_FALSE(regex_accepts("(a{2,}){2,}", "aaa"));
  CHECK(regex_accepts("(a{2,}){2,}", "aaaaa"));
  CHECK(regex_accepts("(a{2,})*", ""));
  CHECK_FALSE(regex_accepts("(a{2,})*", "a"));
  CHECK(regex_accepts("(a{2,})*", "aaa"));
  // A long text under a deep nesting stays cheap to match.
  CHECK(regex_accepts("((((a*)*)*)*)*b", std::string(300, 'a') + "b"));
}
