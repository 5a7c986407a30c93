// Framed JSON (grammar_kind::framed_json): schema-valid JSON values between fixed texts,
// counted and separated, as forced tool calls need them.
#include <catch2/catch.hpp>

#include "core/grammar/grammar_cache.hpp"
#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using namespace inflight::grammar_test;

TEST_CASE("framed json: begin, end, separator and item counts", "[grammar][framed]") {
  framed_json_spec spec;
  spec.schema = R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})";
  spec.begin = "<c>";
  spec.end = "</c>";
  spec.separator = "\n";
  spec.min_items = 1;
  spec.max_items = 2;
  const auto g = must(grammar_from_framed_json(spec));
  CHECK(accepts(*g, R"(<c>{"n":1}</c>)"));
  CHECK(accepts(*g, "<c>{\"n\":1}</c>\n<c>{\"n\": 2}</c>"));
  CHECK_FALSE(accepts(*g, "<c>{\"n\":1}</c>\n<c>{\"n\":2}</c>\n<c>{\"n\":3}</c>"));  // at most 2
  CHECK_FALSE(accepts(*g, ""));                                                       // at least 1
  CHECK_FALSE(accepts(*g, R"({"n":1})"));
  CHECK_FALSE(accepts(*g, R"(<c>{"n":"1"}</c>)"));
  CHECK_FALSE(accepts(*g, "<c>{\"n\":1}</c><c>{\"n\":2}</c>"));  // the separator is required

  // The same through its JSON text and the cache's kind; no upper bound.
  spec.max_items.reset();
  auto via_text = try_compile({grammar_kind::framed_json, to_json_text(spec)});
  REQUIRE(via_text.has_value());
  CHECK(accepts(*via_text, "<c>{\"n\":1}</c>\n<c>{\"n\":2}</c>\n<c>{\"n\":3}</c>"));
  CHECK(std::string(to_string(grammar_kind::framed_json)) == "framed_json");

  spec.min_items = 0;
  spec.max_items = 1;
  const auto optional = must(grammar_from_framed_json(spec));
  CHECK(accepts(*optional, ""));
  CHECK(accepts(*optional, R"(<c>{"n":1}</c>)"));
}

TEST_CASE("framed json: schema errors name the keyword and path, bad specs are errors", "[grammar][framed]") {
  framed_json_spec spec;
  spec.schema = R"({"type": "object", "properties": {"a": {"type": "array", "contains": {"type": "string"}}}})";
  auto refused = grammar_from_framed_json(spec);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message.find("'contains'") != std::string::npos);
  CHECK(refused.error().message.find("/properties/a") != std::string::npos);
  spec.schema = "{}";
  spec.min_items = 3;
  spec.max_items = 2;
  CHECK_FALSE(grammar_from_framed_json(spec).has_value());
  for (const char* text : {"[]", "{\"begin\": \"x\"}", "{\"schema\": {}, \"begin\": 1}", "{\"schema\": {}, \"min_items\": -1}",
                           "not json"}) {
    INFO(text);
    CHECK_FALSE(try_compile({grammar_kind::framed_json, text}).has_value());
  }
}
