// Statements and expressions of the Jinja subset, each against the text Python's Jinja
// renders for it.
#include "tests/core/model/template/jinja_test_util.hpp"

using namespace inflight::jinja::testing;

TEST_CASE("jinja: output, literals and undefined values", "[core][template]") {
  CHECK(render("Hello {{ name }}!", {{"name", "world"}}) == "Hello world!");
  CHECK(render("[{{ missing }}]") == "[]");
  CHECK(render("{{ {}.a }}|{{ {}['k'] }}|{{ none.a }}") == "||");
  CHECK(error_of("{{ missing.attr }}") == "template line 1, column 4: 'missing' is undefined");  // as jinja2
  CHECK(error_of("{{ missing['k'] }}") == "template line 1, column 4: 'missing' is undefined");
  CHECK(render("{{ 'a\\'b' }}{{ \"q\\\"\" }}{{ 'x\\ny' }}{{ 'tab\\t' }}") == "a'bq\"x\nytab\t");
  CHECK(render("{{ '\\u00e9\\x41' }}") == "\xC3\xA9" "A");
  CHECK(render("{{ 'a' 'b' }}") == "ab");
  CHECK(render("{{ 42 }} {{ -7 }} {{ 1.5 }} {{ 2.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }}") ==
        "42 -7 1.5 2.0 1e+20 0.30000000000000004");
  CHECK(render("{{ true }} {{ False }} {{ none }} {{ None }}") == "True False None None");
  CHECK(render("{{ [1, 'a', none] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }} {{ (1,) }}") == "[1, 'a', None] {'k': 'v', 'n': 1} [1, 2] [1]");
  CHECK(render("{# a comment #}x{# another\nline #}") == "x");
}

TEST_CASE("jinja: arithmetic, comparison and logic follow Python", "[core][template]") {
  CHECK(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}") ==
        "3 -4 1 2 3.5 1024 0.5");
  CHECK(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ 'a' ~ 1 ~ none }}") ==
        "7 9 ababab [1, 1] a1None");
  CHECK(render("{{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] == [1, 2] }} {{ 3 >= 4 }} {{ 1 != 2 }}") ==
        "True True True False True");
  CHECK(render("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}") ==
        "True True True True");
  CHECK(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not [] }} {{ none or false }}") == "x y True False");
  CHECK(render("{{ 'yes' if 1 > 0 else 'no' }}|{{ 'yes' if 0 }}|{{ 1 if false else 2 if true else 3 }}") == "yes||2");
  CHECK(render("{{ -x|abs }}", {{"x", 3}}) == "3");  // filters bind tighter than unary minus's operand
  CHECK(render("{{ 'a' + 'b' | upper }}") == "aB");   // and tighter than +
  CHECK(render("{{ not none is none }}") == "False");
}

TEST_CASE("jinja: attribute, item and slice access", "[core][template]") {
  const ojson ctx = {{"m", {{"role", "user"}, {"parts", {"a", "b", "c", "d"}}}}, {"s", "h\xC3\xA9llo"}};
  CHECK(render("{{ m.role }} {{ m['role'] }} {{ m.parts[1] }} {{ m.parts[-1] }} {{ m.parts.0 }}", ctx) ==
        "user user b d a");
  CHECK(render("{{ m.parts[1:] }} {{ m.parts[:2] }} {{ m.parts[::-1] }} {{ m.parts[::2] }} {{ m.parts[-2:] }}", ctx) ==
        "['b', 'c', 'd'] ['a', 'b'] ['d', 'c', 'b', 'a'] ['a', 'c'] ['c', 'd']");
  CHECK(render("{{ s[1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }}", ctx) == "\xC3\xA9 \xC3\xA9l oll\xC3\xA9h 5");
  CHECK(render("{{ m.parts[10] is defined }} {{ m.nope is defined }} {{ m.role is defined }}", ctx) ==
        "False False True");
}

TEST_CASE("jinja: if / elif / else", "[core][template]") {
  const char* source = "{% if n > 1 %}many{% elif n == 1 %}one{% else %}none{% endif %}";
  CHECK(render(source, {{"n", 5}}) == "many");
  CHECK(render(source, {{"n", 1}}) == "one");
  CHECK(render(source, {{"n", 0}}) == "none");
  CHECK(render("{% if undefined_thing %}x{% endif %}{% if '' %}y{% endif %}{% if [0] %}z{% endif %}") == "z");
}

TEST_CASE("jinja: for loops, the loop variable, else, filters and unpacking", "[core][template]") {
  const ojson ctx = {{"xs", {"a", "b", "c"}}, {"d", {{"k1", 1}, {"k2", 2}}}};
  CHECK(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", ctx) ==
        "1a,2b,3c");
  CHECK(render("{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}"
               "{{ loop.length }} {% endfor %}",
               ctx) == "032True3 121False3 210False3 ");
  CHECK(render("{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}", ctx) ==
        "[<a>b][a<b>c][b<c>]");
  CHECK(render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty");
  CHECK(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", ctx) == "a2c2");
  CHECK(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", ctx) == "k1=1;k2=2;");
  CHECK(render("{% for k in d %}{{ k }}{% endfor %}", ctx) == "k1k2");
  CHECK(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", ctx) == "ac");
  CHECK(render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx) == "a");
  CHECK(render("{% for i in range(3) %}{% for j in range(i) %}{{ i }}{{ j }} {% endfor %}{% endfor %}") ==
        "10 20 21 ");
  CHECK(render("{% for c in 'ab' %}{{ c }}.{% endfor %}") == "a.b.");
}

TEST_CASE("jinja: set, block set, scoping and namespace", "[core][template]") {
  CHECK(render("{% set x = 1 %}{% set y = x + 1 %}{{ x }}{{ y }}") == "12");
  CHECK(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}") == "12");
  CHECK(render("{% set block %}in {{ 'a block' }}{% endset %}[{{ block }}]") == "[in a block]");
  // A set inside a loop does not leak out of it; a namespace carries values out.
  CHECK(render("{% set x = 'outer' %}{% for i in [1] %}{% set x = 'inner' %}{% endfor %}{{ x }}") == "outer");
  CHECK(render("{% set ns = namespace(found=false, n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
               "{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}") ==
        "True 6");
  CHECK(render("{% set messages = messages[1:] %}{{ messages|length }}", {{"messages", {1, 2, 3}}}) == "2");
}

TEST_CASE("jinja: macros with defaults, keywords and recursion", "[core][template]") {
  CHECK(render("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
               "{{ greet('Ann') }} {{ greet('Bob', greeting='Hi') }} {{ greet(greeting='Yo', name='Cy') }}") ==
        "Hello, Ann! Hi, Bob! Yo, Cy!");
  CHECK(render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}"
               "{{ fact(5) }}") == "120");
  // A macro sees its parameters and the template's globals, not its caller's loop variables.
  CHECK(render("{% macro show() %}[{{ g }}{{ i }}]{% endmacro %}{% for i in [1] %}{{ show() }}{% endfor %}",
               {{"g", "G"}}) == "[G]");
  CHECK(render("{% macro m(a) %}{{ a }}{% endmacro %}{{ m() }}|{{ m is callable }}") == "|True");
}

TEST_CASE("jinja: string and dict methods", "[core][template]") {
  CHECK(render("[{{ '  x  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n a'.lstrip() }}][{{ 'a\\n\\n'.rstrip('\\n') }}]") ==
        "[x][a][a][a]");
  CHECK(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('b') }}") ==
        "True True False");
  CHECK(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}") ==
        "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
  CHECK(render("{{ 'x</think>y'.split('</think>')[-1] }} {{ 'hello'.replace('l', 'L') }} {{ 'aaa'.replace('a', 'b', 2) }}") ==
        "y heLLo bba");
  CHECK(render("{{ 'Ab'.upper() }}{{ 'Ab'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}") ==
        "ABab Hello World Hello");
  CHECK(render("{{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }}") ==
        "2 -1 2 a-b");
  const ojson ctx = {{"d", {{"b", 1}, {"a", 2}}}};
  CHECK(render("{{ d.keys() }} {{ d.values() }} {{ d.items() }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }}",
               ctx) == "['b', 'a'] [1, 2] [['b', 1], ['a', 2]] 2 dflt None");
}

TEST_CASE("jinja: globals raise_exception, range and strftime_now", "[core][template]") {
  CHECK(render("{{ range(3) }} {{ range(1, 4) }} {{ range(10, 0, -3) }} {{ range(0) }}") ==
        "[0, 1, 2] [1, 2, 3] [10, 7, 4, 1] []");
  CHECK(error_of("{{ raise_exception('Roles must alternate!') }}") == "Roles must alternate!");
  CHECK(error_of("{% if true %}{{ raise_exception('inside ' ~ 1) }}{% endif %}") == "inside 1");
  const std::string year = render("{{ strftime_now('%Y') }}");
  REQUIRE(year.size() == 4);
  CHECK(year >= "2024");
  CHECK(render("{{ strftime_now is defined }}") == "True");
}

TEST_CASE("jinja: {% generation %} blocks render their body in place", "[core][template]") {
  CHECK(render("a{% generation %}b{% endgeneration %}c") == "abc");
}

TEST_CASE("jinja: raw blocks are text", "[core][template]") {
  CHECK(render("{% raw %}{{ not evaluated }}{% endraw %}!") == "{{ not evaluated }}!");
}
