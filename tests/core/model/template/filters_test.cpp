// Filters and tests, each against what Python's Jinja (with transformers' tojson) renders.
#include "tests/core/model/template/jinja_test_util.hpp"

using namespace inflight::jinja::testing;

TEST_CASE("jinja filters: tojson writes Python's json.dumps, keeping key order", "[core][template]") {
  const ojson ctx = ojson::parse(R"({"t": {"name": "f", "a": [1, 2.5, true, null], "e": {}, "l": [], "s": "é\"\n<"}})");
  CHECK(render("{{ t | tojson }}", ctx) ==
        R"({"name": "f", "a": [1, 2.5, true, null], "e": {}, "l": [], "s": "é\"\n<"})");
  CHECK(render("{{ t.a | tojson(indent=2) }}", ctx) == "[\n  1,\n  2.5,\n  true,\n  null\n]");
  CHECK(render("{{ {'b': {'c': 1}} | tojson(indent=4) }}") == "{\n    \"b\": {\n        \"c\": 1\n    }\n}");
  CHECK(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}") == R"({"a": 2, "b": 1})");
  CHECK(render("{{ [1, 2] | tojson(separators=(',', ':')) }}") == "[1,2]");
  CHECK(render("{{ 'x\\u0001' | tojson }} {{ 1.0 | tojson }}") == "\"x\\u0001\" 1.0");
  // json.dumps(Undefined) is a TypeError in transformers
  CHECK_THAT(error_of("{{ undefined_x | tojson }}"), Catch::Contains("an undefined value is not JSON serializable"));
  // ensure_ascii=True: \uXXXX escapes, a surrogate pair above U+FFFF, DEL escaped too
  CHECK(render("{{ {'k\u00e9': '\u00e9\U0001F600\x7f<'} | tojson(ensure_ascii=True) }}") ==
        R"({"k\u00e9": "\u00e9\ud83d\ude00\u007f<"})");
  CHECK(render("{{ '\u00e9' | tojson(ensure_ascii=False) }}") == "\"\u00e9\"");
}

TEST_CASE("jinja filters: dictsort, min, max, sum and attr, as jinja2 computes them", "[core][template]") {
  CHECK(render("{% for k, v in {'b': 1, 'A': 2, 'c': 0} | dictsort %}{{ k }}{{ v }},{% endfor %}") == "A2,b1,c0,");
  CHECK(render("{% for k, v in {'b': 1, 'A': 2} | dictsort(true) %}{{ k }}{{ v }}{% endfor %}") == "A2b1");
  CHECK(render("{% for k, v in {'b': 1, 'a': 2} | dictsort(by='value', reverse=true) %}{{ k }}{% endfor %}") == "ab");
  CHECK_THAT(error_of("{{ [1] | dictsort }}"), Catch::Contains("dictsort: needs a dict"));
  CHECK(render("{{ [3, 1, 2] | min }}{{ [3, 1, 2] | max }}{{ ['b', 'A'] | min }}{{ ['b', 'a'] | max(true) }}") == "13Ab");
  CHECK(render("{{ [{'n': 2}, {'n': 1}] | min(attribute='n') }}|{{ [] | min }}|") == "{'n': 1}||");
  CHECK(render("{{ [1, 2, 3] | sum }} {{ [{'n': 2}, {'n': 1}] | sum(attribute='n') }} {{ [0.5] | sum(start=1) }}") ==
        "6 3 1.5");
  CHECK(render("{{ {'a': 'x'} | attr('a') }}") == "x");
}

TEST_CASE("jinja filters: select, reject and map over none yield nothing, as in jinja2", "[core][template]") {
  CHECK(render("{{ none | selectattr('type', 'equalto', 'x') | list | length }}") == "0");
  CHECK(render("{{ tools | rejectattr('a') | list }}{{ tools | select | list }}{{ tools | map(attribute='a') | list }}",
               {{"tools", nullptr}}) == "[][][]");
  CHECK_THAT(error_of("{{ none | list }}"), Catch::Contains("cannot iterate"));
}

TEST_CASE("jinja: attributes of an undefined value are an error, as jinja2's UndefinedError", "[core][template]") {
  CHECK(error_of("{{ x.y }}") == "template line 1, column 4: 'x' is undefined");
  CHECK_THAT(error_of("{{ m.content[0].text }}", {{"m", {{"role", "user"}}}}), Catch::Contains("'content' is undefined"));
  CHECK_THAT(error_of("{% if x.y is defined %}{% endif %}"), Catch::Contains("'x' is undefined"));
  // none's attributes are undefined, not an error; a missing key of a dict too
  CHECK(render("{{ none.a is defined }}{{ {'a': 1}.b is defined }}") == "FalseFalse");
}

TEST_CASE("jinja: str.format as Python's", "[core][template]") {
  CHECK(render("{{ '<{}|{}>'.format('a', 1) }} {{ '{1}{0}{1}'.format('a', 'b') }} {{ '{n}:{n!r}'.format(n='q') }}") ==
        "<a|1> bab q:'q'");
  CHECK(render("[{{ '{:>4}'.format('ab') }}][{{ '{:*^6}'.format('ab') }}][{{ '{:3}'.format(7) }}][{{ '{{}}'.format() }}]") ==
        "[  ab][**ab**][  7][{}]");
  CHECK_THAT(error_of("{{ '{}{0}'.format('a') }}"), Catch::Contains("cannot switch from automatic field numbering"));
  CHECK_THAT(error_of("{{ '{}{}'.format('a') }}"), Catch::Contains("Replacement index 1 out of range"));
  CHECK_THAT(error_of("{{ '{x}'.format() }}"), Catch::Contains("no argument named 'x'"));
}

TEST_CASE("jinja filters: strings", "[core][template]") {
  CHECK(render("[{{ '  a b \\n' | trim }}][{{ 'xxaxx' | trim('x') }}]") == "[a b][a]");
  CHECK(render("{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hello big-world' | title }} {{ 'hELLO' | capitalize }}") ==
        "HELLO WORLD hello Hello Big-World Hello");
  CHECK(render("{{ 'aXbX' | replace('X', '-') }} {{ 'aaa' | replace('a', 'b', 1) }}") == "a-b- baa");
  CHECK(render("{{ 42 | string }}{{ none | string }} {{ '<a&\"b\\'>' | escape }} {{ 'x' | safe }}") ==
        "42None &lt;a&amp;&#34;b&#39;&gt; x");
  CHECK(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}") == "a\n  b\n\n  c|  a\n  b");
}

TEST_CASE("jinja filters: default, length, numbers", "[core][template]") {
  CHECK(render("{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ x | d(1) }}") ==
        "d  d 1");
  CHECK(render("{{ [1, 2] | length }} {{ 'héllo' | length }} {{ {'a': 1} | count }} {{ missing | length }}") ==
        "2 5 1 0");
  CHECK(render("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(-1) }} {{ 3.9 | int }} {{ true | int }}") ==
        "42 4 0 -1 3 1");
  CHECK(render("{{ '2.5' | float }} {{ 3 | float }} {{ -3 | abs }} {{ -2.5 | abs }}") == "2.5 3.0 3 2.5");
  CHECK(render("{{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }}") ==
        "2.0 3.14 3.0 2.0");
}

TEST_CASE("jinja filters: sequences", "[core][template]") {
  const ojson ctx = ojson::parse(R"({"ms": [{"role": "system", "n": 3}, {"role": "user", "n": 1}, {"role": "user", "n": 2}]})");
  CHECK(render("{{ [1, 2, 3] | join(', ') }} {{ ms | join('/', attribute='role') }} {{ ['a', 'b'] | join }}", ctx) ==
        "1, 2, 3 system/user/user ab");
  CHECK(render("{{ [3, 1] | first }} {{ [3, 1] | last }} {{ [] | first is defined }} {{ 'abc' | last }}") ==
        "3 1 False c");
  CHECK(render("{{ {'a': 1} | items | list }} {{ 'ab' | list }} {{ {'k': 1} | list }}") == "[['a', 1]] ['a', 'b'] ['k']");
  CHECK(render("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='n') | list }}", ctx) == "[1, 2]");
  CHECK(render("{{ ms | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}", ctx) == "['system']");
  CHECK(render("{{ [0, 1, 2, 3] | select('odd') | list }} {{ [0, 1, '', 'x'] | select | list }} {{ [1, 2, 3] | reject('even') | list }}") ==
        "[1, 3] [1, 'x'] [1, 3]");
  CHECK(render("{{ ['a', 'B'] | map('upper') | list }} {{ ms | map(attribute='nope', default='-') | join }}", ctx) ==
        "['A', 'B'] ---");
  CHECK(render("{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }}") ==
        "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c']");
  CHECK(render("{{ ms | sort(attribute='n') | map(attribute='n') | list }}", ctx) == "[1, 2, 3]");
  CHECK(render("{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ [1, 1, 2] | unique | list }}") == "['a', 'b'] [1, 2]");
  CHECK(render("{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}") == "[3, 2, 1] cba");
}

TEST_CASE("jinja tests: the is-tests", "[core][template]") {
  const ojson ctx = ojson::parse(R"({"s": "x", "i": 3, "f": 1.5, "b": true, "n": null, "l": [1], "d": {"k": 1}})");
  CHECK(render("{{ s is string }}{{ i is string }} {{ i is number }}{{ f is number }}{{ s is number }} "
               "{{ i is integer }}{{ f is integer }} {{ f is float }}",
               ctx) == "TrueFalse TrueTrueFalse TrueFalse True");
  CHECK(render("{{ d is mapping }}{{ l is mapping }} {{ l is iterable }}{{ s is iterable }}{{ i is iterable }} "
               "{{ l is sequence }} {{ b is boolean }}{{ i is boolean }} {{ b is true }}{{ b is false }}",
               ctx) == "TrueFalse TrueTrueFalse True TrueFalse TrueFalse");
  CHECK(render("{{ n is none }}{{ s is none }} {{ s is defined }}{{ zz is defined }}{{ zz is undefined }} "
               "{{ n is not none }}",
               ctx) == "TrueFalse TrueFalseTrue False");
  CHECK(render("{{ i is odd }}{{ i is even }} {{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }} "
               "{{ s is equalto 'x' }}{{ s is eq('y') }} {{ 1 is in [1, 2] }} {{ 'ab' is lower }}{{ 'Ab' is upper }}",
               ctx) == "TrueFalse TrueFalse TrueFalse True TrueFalse");
}

TEST_CASE("jinja: dicts with number keys, as ByteDance-Seed-OSS's budget table", "[core][template]") {
  const char* table = "{%- set gears = {0: 0, 512: 128, 1024: 256} -%}";
  CHECK(render(std::string(table) + "{% for k, v in gears | dictsort %}{{ k + 1 }}:{{ v }},{% endfor %}") ==
        "1:0,513:128,1025:256,");
  CHECK(render(std::string(table) + "{{ gears[512] }} {{ 1024 in gears }} {{ '512' in gears }} {{ gears.get(0) }}") ==
        "128 True False 0");
  CHECK(render(std::string(table) + "{{ gears }} {{ gears | tojson }} {{ {none: 1, true: 2} }}") ==
        R"({0: 0, 512: 128, 1024: 256} {"0": 0, "512": 128, "1024": 256} {None: 1, True: 2})");
  CHECK_THAT(error_of("{{ {[1]: 2} }}"), Catch::Contains("a list cannot be a dict key"));
}
