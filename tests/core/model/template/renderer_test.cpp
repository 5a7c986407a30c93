// Render errors and bounds: every failure is an error value naming where, and no
// template can run away with the output, the loop count or the stack.
#include "tests/core/model/template/jinja_test_util.hpp"

using namespace inflight::jinja;
using namespace inflight::jinja::testing;

TEST_CASE("jinja render errors name the template position", "[core][template]") {
  CHECK(error_of("line one\n{{ 'a' + 1 }}") ==
        "template line 2, column 8: unsupported operand types for +: string and integer");
  CHECK(error_of("{{ 1 / 0 }}") == "template line 1, column 6: division by zero");
  CHECK(error_of("{{ 9223372036854775807 + 1 }}") == "template line 1, column 24: integer overflow");
  CHECK(error_of("{{ nothing() }}") == "template line 1, column 4: 'nothing' is undefined");
  CHECK(error_of("{{ 'x'.nosuch() }}") == "template line 1, column 8: a string has no method 'nosuch'");
  CHECK(error_of("{% for x in 5 %}{% endfor %}") == "template line 1, column 4: cannot iterate over integer");
  CHECK(error_of("{% set x = 1 %}{% set x.a = 2 %}") ==
        "template line 1, column 19: cannot set an attribute of 'x': it is not a namespace");
  CHECK(error_of("{% set ns = namespace() %}{% set ns.me = ns %}") ==
        "template line 1, column 30: a namespace cannot hold a namespace");
  CHECK(error_of("{% break %}") == "template: {% break %} or {% continue %} outside a loop");
  CHECK(error_of("{{ [1, 'a'] | sort }}") == "template line 1, column 15: sort: the items cannot be compared with each other");
  CHECK(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}") == "template line 1, column 35: macro 'm' takes 1 arguments");
}

TEST_CASE("jinja render bounds: output size", "[core][template]") {
  render_limits limits;
  limits.max_output_bytes = 100;
  CHECK(render("{{ 'x' * 100 }}", ojson::object(), limits).size() == 100);
  CHECK_THAT(error_of("{{ 'x' * 101 }}", ojson::object(), limits), Catch::Contains("the output exceeds 100 bytes"));
  CHECK_THAT(error_of("{% for i in range(60) %}ab{% endfor %}", ojson::object(), limits),
             Catch::Contains("the output exceeds 100 bytes"));
  CHECK_THAT(error_of("{{ 'x' * 9223372036854775807 }}"), Catch::Contains("the output exceeds"));
  CHECK_THAT(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"),
             Catch::Contains("the output exceeds"));
}

TEST_CASE("jinja render bounds: loop iterations, calls and list sizes", "[core][template]") {
  render_limits limits;
  limits.max_iterations = 1000;
  CHECK_THAT(error_of("{% for i in range(10000) %}{% endfor %}", ojson::object(), limits),
             Catch::Contains("exceeds 1000 loop iterations"));
  CHECK_THAT(error_of("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", ojson::object(),
                      limits),
             Catch::Contains("exceeds 1000 loop iterations"));
  CHECK_THAT(error_of("{{ range(9223372036854775807) | length }}"), Catch::Contains("loop iterations"));
  CHECK_THAT(error_of("{{ [1] * 1000000000 }}"), Catch::Contains("loop iterations"));
  // Two recursive calls per level: exponential without the call count.
  CHECK_THAT(error_of("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"),
             Catch::Contains("loop iterations"));
}

TEST_CASE("jinja render bounds: recursion depth and value nesting", "[core][template]") {
  CHECK_THAT(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), Catch::Contains("nests deeper than 200"));
  CHECK_THAT(error_of("{% set ns = namespace(x=[]) %}{% for i in range(100) %}{% set ns.x = [ns.x] %}{% endfor %}"),
             Catch::Contains("nests too deeply"));
  std::string deep = "0";
  for (int i = 0; i < 70; ++i) deep = "[" + deep + "]";
  auto t = jinja_template::try_parse("{{ x }}");
  REQUIRE(t);
  auto out = t->try_render(ojson{{"x", ojson::parse(deep)}});
  REQUIRE_FALSE(out);
  CHECK(out.error().message == "template context nests deeper than 64 levels");
}

TEST_CASE("jinja: a parsed template renders many contexts", "[core][template]") {
  auto t = jinja_template::try_parse("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  REQUIRE(t);
  const jinja_template copy = *t;
  CHECK(copy.try_render(ojson{{"messages", {{{"role", "user"}, {"content", "a"}}}}}).value() == "<user>a");
  CHECK(t->try_render(ojson{{"messages", ojson::array()}}).value() == "");
  CHECK_FALSE(t->try_render(ojson::array()));
}
