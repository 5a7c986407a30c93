// Whitespace control: {%- -%}, trim_blocks, lstrip_blocks, the trailing newline, and
// lexer errors that name the line and column.
#include "core/model/template/lexer.hpp"
#include "tests/core/model/template/jinja_test_util.hpp"

using namespace inflight::jinja;
using namespace inflight::jinja::testing;

namespace {

std::string render_with(std::string_view source, lex_options options) {
  auto t = jinja_template::try_parse(source, options);
  if (!t) FAIL(t.error().message);
  auto out = t->try_render(ojson::object());
  if (!out) FAIL(out.error().message);
  return *out;
}

}  // namespace

TEST_CASE("jinja lexer: - strips white space on its side of a tag", "[core][template]") {
  CHECK(render("a  {{- 'b' -}}  \n c") == "abc");
  CHECK(render("a \n {%- if true -%} \n b \n {%- endif -%} \n c") == "abc");
  CHECK(render("a  {#- note -#}  b") == "ab");
  CHECK(render("{{ 'x' }}  {{ 'y' }}") == "x  y");  // no - and no block: kept
}

TEST_CASE("jinja lexer: trim_blocks drops the newline after a block tag, not after {{ }}", "[core][template]") {
  CHECK(render("{% if true %}\nyes\n{% endif %}\nend") == "yes\nend");
  CHECK(render("{{ 'x' }}\ny") == "x\ny");
  CHECK(render("{# c #}\nz") == "z");
  CHECK(render("{% if true +%}\nkept{% endif %}") == "\nkept");
  CHECK(render_with("{% if true %}\nyes{% endif %}", {false, false, false}) == "\nyes");
}

TEST_CASE("jinja lexer: lstrip_blocks drops indentation before a block tag on its own line", "[core][template]") {
  CHECK(render("<\n    {% if true %}\n    x\n    {% endif %}\n>") == "<\n    x\n>");
  CHECK(render("a {% if true %}b{% endif %}") == "a b");     // text before the tag on its line: kept
  CHECK(render("  {{ 'v' }}") == "  v");                      // not for {{ }}
  CHECK(render("  {%+ if true %}x{% endif %}") == "  x");      // + keeps it
  CHECK(render("\t {# comment #}\nq") == "q");
  CHECK(render_with("  {% if true %}x{% endif %}", {true, false, false}) == "  x");
}

TEST_CASE("jinja lexer: one trailing newline of the template is dropped, CRLF reads as LF", "[core][template]") {
  CHECK(render("x\n") == "x");
  CHECK(render("x\n\n") == "x\n");
  CHECK(render_with("x\n", {true, true, true}) == "x\n");
  CHECK(render("a\r\nb\rc") == "a\nb\nc");
  CHECK(render("{% if true %}\r\nyes{% endif %}") == "yes");
}

TEST_CASE("jinja lexer: errors name the line and column", "[core][template]") {
  CHECK(error_of("ok\n  {{ 'open") == "template line 2, column 6: unterminated string");
  CHECK(error_of("{{ x ") == "template line 1, column 1: unterminated tag");
  CHECK(error_of("a\nb {# never closed") == "template line 2, column 3: unterminated comment");
  CHECK(error_of("{{ x $ y }}") == "template line 1, column 6: unexpected character '$' in a tag");
  CHECK(error_of("{% raw %}abc") == "template line 1, column 1: {% raw %} without {% endraw %}");
  auto tokens = try_lex("{{ a.b }}");
  REQUIRE(tokens);
  REQUIRE(tokens->size() == 6);
  CHECK((*tokens)[2].text == ".");
  CHECK((*tokens)[3].column == 6);
}
