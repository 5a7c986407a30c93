// Parse errors: a template that does not parse is an error value naming where.
#include "core/model/template/parser.hpp"
#include "tests/core/model/template/jinja_test_util.hpp"

using namespace inflight::jinja::testing;

TEST_CASE("jinja parser: unclosed and misplaced blocks", "[core][template]") {
  CHECK(error_of("{% for m in messages %}\n{{ m }}") ==
        "template line 2, column 8: expected 'endfor' to close the 'for' at line 1, found the end of the template");
  CHECK(error_of("{% if a %}x{% endfor %}") == "template line 1, column 15: unexpected 'endfor'");
  CHECK(error_of("{% endif %}") == "template line 1, column 4: unexpected 'endif'");
  CHECK(error_of("{% include 'other.jinja' %}") == "template line 1, column 4: unknown tag 'include'");
  CHECK(error_of("{% for x in xs recursive %}{% endfor %}") ==
        "template line 1, column 16: recursive loops are not supported");
}

TEST_CASE("jinja parser: bad expressions", "[core][template]") {
  CHECK(error_of("{{ 1 + }}") == "template line 1, column 8: expected an expression, found '}}'");
  CHECK(error_of("{{ (1, 2 }}") == "template line 1, column 10: unexpected '}', expected ')'");
  CHECK(error_of("{{ [1, 2") == "template line 1, column 4: '[' is never closed");
  CHECK(render("{{ {'a': {'b': 1}} }}x") == "{'a': {'b': 1}}x");  // }} closing a dict, then the tag
  CHECK(error_of("{{ messages[] }}") == "template line 1, column 13: expected an index, found ']'");
  CHECK(error_of("{% set = 3 %}") == "template line 1, column 8: expected a variable name, found '='");
  CHECK(error_of("{{ 99999999999999999999 }}") == "template line 1, column 4: integer 99999999999999999999 is out of range");
  CHECK(error_of("{{ f(a=1, 2) }}") == "template line 1, column 11: a positional argument follows a keyword argument");
}

TEST_CASE("jinja parser: unknown filters and tests fail only when evaluated, as in jinja2", "[core][template]") {
  CHECK(error_of("{{ x | frobnicate }}") == "template line 1, column 8: unknown filter 'frobnicate'");
  CHECK(error_of("{% if x is frobbed %}{% endif %}") == "template line 1, column 12: unknown test 'frobbed'");
  // a branch that does not run may use them (DeepSeek-V3.2's `| from_json` behind a type check)
  CHECK(render("{% if false %}{{ x | frobnicate }}{% endif %}{% if true %}ok{% else %}{{ x is frobbed }}{% endif %}",
               {{"x", 1}}) == "ok");
}

TEST_CASE("jinja parser: nesting is bounded", "[core][template]") {
  const std::string deep_expr = "{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}";
  CHECK_THAT(error_of(deep_expr), Catch::Contains("expressions nest deeper than 100"));
  std::string deep_blocks;
  for (int i = 0; i < 150; ++i) deep_blocks += "{% if true %}";
  CHECK_THAT(error_of(deep_blocks), Catch::Contains("nest deeper than 100"));
  CHECK_THAT(error_of("{{ " + std::string(300, '-') + "1 }}"), Catch::Contains("nest deeper"));
  CHECK_THAT(error_of("{{ " + std::string(300, '[') + std::string(300, ']') + " }}"), Catch::Contains("nest deeper"));
}
