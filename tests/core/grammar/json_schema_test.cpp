#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using grammar_test::accepts;
using grammar_test::must;

namespace {

std::shared_ptr<const grammar> schema(std::string_view text) { return must(grammar_from_json_schema(text)); }

error schema_error(std::string_view text) {
  auto g = grammar_from_json_schema(text);
  REQUIRE_FALSE(g.has_value());
  return g.error();
}

}  // namespace

TEST_CASE("json schema: strings with escapes and unicode", "[core][grammar]") {
  auto g = schema(R"({"type": "string"})");
  CHECK(accepts(*g, R"("")"));
  CHECK(accepts(*g, R"("plain text")"));
  CHECK(accepts(*g, R"("quote \" backslash \\ slash \/ \b\f\n\r\t")"));
  CHECK(accepts(*g, R"("\u00e9\u65E5")"));
  CHECK(accepts(*g, R"("\ud83d\ude00")"));  // a surrogate pair
  CHECK(accepts(*g, "\"日本語 é 😀\""));
  CHECK_FALSE(accepts(*g, R"("\ud800")"));     // a lone surrogate
  CHECK_FALSE(accepts(*g, R"("\ude00\ud83d")"));
  CHECK_FALSE(accepts(*g, R"("\x41")"));
  CHECK_FALSE(accepts(*g, R"("\u12")"));
  CHECK_FALSE(accepts(*g, "\"tab\there\""));   // raw control character
  CHECK_FALSE(accepts(*g, "\"line\nbreak\""));
  CHECK_FALSE(accepts(*g, "\"\xC3\""));        // invalid UTF-8
  CHECK_FALSE(accepts(*g, R"("a" )"));
  CHECK_FALSE(accepts(*g, R"("a)"));
}

TEST_CASE("json schema: numbers, integers, booleans, null", "[core][grammar]") {
  auto num = schema(R"({"type": "number"})");
  for (const char* ok : {"0", "-0", "12", "-3.25", "1e10", "1E+10", "2.5e-3", "-0.0e0", "10.01"}) CHECK(accepts(*num, ok));
  for (const char* bad : {"01", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "NaN", "1 "}) CHECK_FALSE(accepts(*num, bad));
  auto integer = schema(R"({"type": "integer"})");
  CHECK(accepts(*integer, "0"));
  CHECK(accepts(*integer, "-42"));
  CHECK_FALSE(accepts(*integer, "4.0"));
  CHECK_FALSE(accepts(*integer, "1e3"));
  CHECK_FALSE(accepts(*integer, "007"));
  auto b = schema(R"({"type": "boolean"})");
  CHECK(accepts(*b, "true"));
  CHECK(accepts(*b, "false"));
  CHECK_FALSE(accepts(*b, "null"));
  auto n = schema(R"({"type": "null"})");
  CHECK(accepts(*n, "null"));
  CHECK_FALSE(accepts(*n, "nul"));
  auto either = schema(R"({"type": ["string", "null"]})");
  CHECK(accepts(*either, "null"));
  CHECK(accepts(*either, R"("x")"));
  CHECK_FALSE(accepts(*either, "1"));
}

TEST_CASE("json schema: integer bounds are exact", "[core][grammar]") {
  auto g = schema(R"({"type": "integer", "minimum": 5, "maximum": 123})");
  for (const char* ok : {"5", "9", "10", "99", "100", "123"}) CHECK(accepts(*g, ok));
  for (const char* bad : {"4", "0", "-5", "124", "200", "1000", "05"}) CHECK_FALSE(accepts(*g, bad));
  // Randomized against arithmetic: every n in a window, random bounds of either sign.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 25; ++round) {
    std::optional<long> lo, hi;
    if (rng() % 4 != 0) lo = static_cast<long>(rng() % 2001) - 1000;
    if (rng() % 4 != 0) hi = static_cast<long>(rng() % 2001) - 1000;
    if (lo && hi && *lo > *hi) std::swap(lo, hi);
    const bool is_exclusive = rng() % 3 == 0;
    nlohmann::json s{{"type", "integer"}};
    if (lo) s[is_exclusive ? "exclusiveMinimum" : "minimum"] = *lo;
    if (hi) s[is_exclusive ? "exclusiveMaximum" : "maximum"] = *hi;
    if (is_exclusive && lo && hi && *hi - *lo < 2) continue;
    auto gr = grammar_from_json_schema(s.dump());
    REQUIRE(gr.has_value());
    for (long v = -1100; v <= 1100; v += 1 + static_cast<long>(rng() % 3)) {
      bool want = true;
      if (lo) want = want && (is_exclusive ? v > *lo : v >= *lo);
      if (hi) want = want && (is_exclusive ? v < *hi : v <= *hi);
      INFO(s.dump() << " value " << v);
      CHECK(accepts(*gr, std::to_string(v)) == want);
    }
  }
  CHECK(accepts(*schema(R"({"type": "integer", "minimum": 2.5})"), "3"));
  CHECK_FALSE(accepts(*schema(R"({"type": "integer", "minimum": 2.5})"), "2"));
  CHECK(accepts(*schema(R"({"type": "integer", "maximum": 0, "exclusiveMaximum": true})"), "-1"));
  CHECK_FALSE(accepts(*schema(R"({"type": "integer", "maximum": 0, "exclusiveMaximum": true})"), "0"));
}

TEST_CASE("json schema: number bounds are exact for integral bounds, without exponents", "[core][grammar]") {
  auto g = schema(R"({"type": "number", "minimum": 0, "maximum": 10})");
  for (const char* ok : {"0", "0.0", "0.5", "9.999", "10", "10.0", "10.000", "3"}) CHECK(accepts(*g, ok));
  for (const char* bad : {"-0.5", "-1", "10.01", "10.5", "11", "1e1", "100"}) CHECK_FALSE(accepts(*g, bad));
  auto open = schema(R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})");
  CHECK(accepts(*open, "0.001"));
  CHECK(accepts(*open, "0.999"));
  CHECK_FALSE(accepts(*open, "0"));
  CHECK_FALSE(accepts(*open, "0.000"));
  CHECK_FALSE(accepts(*open, "1"));
  CHECK_FALSE(accepts(*open, "1.0"));
  // Randomized: decimal strings against their value.
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    const long lo = static_cast<long>(rng() % 41) - 20;
    const long hi = lo + static_cast<long>(rng() % 30);
    const bool lo_excl = rng() % 2;
    const bool hi_excl = rng() % 2;
    if (lo == hi && (lo_excl || hi_excl)) continue;
    nlohmann::json s{{"type", "number"}, {lo_excl ? "exclusiveMinimum" : "minimum", lo},
                     {hi_excl ? "exclusiveMaximum" : "maximum", hi}};
    auto gr = grammar_from_json_schema(s.dump());
    REQUIRE(gr.has_value());
    for (int k = 0; k < 150; ++k) {
      const long ip = static_cast<long>(rng() % 61) - 30;
      std::string text = std::to_string(std::labs(ip));
      if (ip < 0 || (ip == 0 && rng() % 4 == 0)) text = "-" + text;
      if (rng() % 2) {
        text += ".";
        const int digits = 1 + static_cast<int>(rng() % 3);
        for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + (rng() % 3 == 0 ? 0 : rng() % 10));
      }
      const double v = std::stod(text);
      const bool want = (lo_excl ? v > lo : v >= lo) && (hi_excl ? v < hi : v <= hi);
      INFO(s.dump() << " value " << text);
      CHECK(accepts(*gr, text) == want);
    }
  }
}

TEST_CASE("json schema: objects, required and optional properties, whitespace policy", "[core][grammar]") {
  auto g = schema(R"({
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name"],
    "additionalProperties": false})");
  CHECK(accepts(*g, R"({"name":"x"})"));
  CHECK(accepts(*g, R"({"name": "x", "age": 3})"));
  CHECK(accepts(*g, R"({"name":"x","tags":["a", "b"]})"));
  CHECK(accepts(*g, R"({"name": "x", "age": 3, "tags": []})"));
  CHECK_FALSE(accepts(*g, R"({})"));                          // name is required
  CHECK_FALSE(accepts(*g, R"({"age": 3})"));
  CHECK_FALSE(accepts(*g, R"({"name": "x", "other": 1})"));   // additionalProperties false
  CHECK_FALSE(accepts(*g, R"({"name": "x",})"));
  CHECK_FALSE(accepts(*g, R"({"name": "x", "age": "3"})"));
  CHECK_FALSE(accepts(*g, R"({"age": 3, "name": "x"})"));     // schema order
  // Whitespace: one optional space after ',' and ':' only.
  CHECK_FALSE(accepts(*g, R"({ "name": "x"})"));
  CHECK_FALSE(accepts(*g, R"({"name" : "x"})"));
  CHECK_FALSE(accepts(*g, R"({"name":  "x"})"));
  CHECK_FALSE(accepts(*g, "{\"name\":\n\"x\"}"));
  CHECK_FALSE(accepts(*g, R"({"name": "x"} )"));

  auto open = schema(R"({"properties": {"a": {"type": "integer"}}, "additionalProperties": true})");
  CHECK(accepts(*open, R"({"a": 1, "zzz": [1, {"q": null}]})"));
  CHECK(accepts(*open, R"({"x": "y"})"));
  CHECK(accepts(*open, R"({})"));
  CHECK_FALSE(accepts(*open, R"({"a": "no"})"));
  // Additional names are never a declared name again, in any spelling.
  CHECK_FALSE(accepts(*open, R"({"a": 1, "a": 2})"));
  CHECK_FALSE(accepts(*open, R"({"a": "x"})"));
  CHECK_FALSE(accepts(*open, R"({"\u0061": 1})"));
  CHECK(accepts(*open, R"({"ab": 1, "": 2, "b": 3, "a\"": 4})"));
  auto typed_extra = schema(R"({"type": "object", "additionalProperties": {"type": "number"}})");
  CHECK(accepts(*typed_extra, R"({"p": 1.5, "q": -2})"));
  CHECK_FALSE(accepts(*typed_extra, R"({"p": "1.5"})"));
  auto closed_by_default = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  CHECK(accepts(*closed_by_default, R"({"a": 1})"));
  CHECK(accepts(*closed_by_default, R"({})"));
  CHECK_FALSE(accepts(*closed_by_default, R"({"b": 1})"));
  auto any_object = schema(R"({"type": "object"})");
  CHECK(accepts(*any_object, R"({"b": [1, {"c": null}], "d": "e"})"));
  CHECK(accepts(*any_object, R"({})"));
  CHECK_FALSE(accepts(*any_object, R"([])"));
  auto odd_names = schema(R"({"type": "object", "properties": {"a\"b/c~d": {"const": 1}, "日本": {"const": 2}}, "required": ["a\"b/c~d", "日本"]})");
  CHECK(accepts(*odd_names, R"({"a\"b/c~d": 1, "日本": 2})"));
}

TEST_CASE("json schema: enum of mixed types and const", "[core][grammar]") {
  auto g = schema(R"({"enum": ["red", 1, null, true, 2.5, {"a": [1, 2]}, [1, "x"], "é"]})");
  for (const char* ok : {R"("red")", "1", "null", "true", "2.5", R"({"a":[1,2]})", R"([1,"x"])", "\"é\""})
    CHECK(accepts(*g, ok));
  for (const char* bad : {R"("blue")", "2", "false", R"({"a":[1]})", R"("Red")", "red"}) CHECK_FALSE(accepts(*g, bad));
  auto filtered = schema(R"({"type": "string", "enum": ["a", 1, "b"]})");
  CHECK(accepts(*filtered, R"("a")"));
  CHECK_FALSE(accepts(*filtered, "1"));
  auto c = schema(R"({"const": {"k": "v"}})");
  CHECK(accepts(*c, R"({"k":"v"})"));
  CHECK_FALSE(accepts(*c, R"({"k":"w"})"));
}

TEST_CASE("json schema: arrays with items, prefixItems, minItems and maxItems", "[core][grammar]") {
  auto g = schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  CHECK_FALSE(accepts(*g, "[]"));
  CHECK_FALSE(accepts(*g, "[1]"));
  CHECK(accepts(*g, "[1,2]"));
  CHECK(accepts(*g, "[1, 2, 3]"));
  CHECK_FALSE(accepts(*g, "[1, 2, 3, 4]"));
  CHECK_FALSE(accepts(*g, "[1, \"2\"]"));
  CHECK_FALSE(accepts(*g, "[1,2,]"));
  auto tuple = schema(R"({"prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false})");
  CHECK(accepts(*tuple, "[]"));
  CHECK(accepts(*tuple, R"(["a"])"));
  CHECK(accepts(*tuple, R"(["a", true])"));
  CHECK_FALSE(accepts(*tuple, R"(["a", true, 1])"));
  CHECK_FALSE(accepts(*tuple, R"([true])"));
  auto tuple_rest = schema(R"({"prefixItems": [{"type": "string"}], "items": {"type": "null"}, "minItems": 2})");
  CHECK_FALSE(accepts(*tuple_rest, R"(["a"])"));
  CHECK(accepts(*tuple_rest, R"(["a", null, null])"));
  auto draft7 = schema(R"({"items": [{"type": "integer"}], "additionalItems": {"type": "string"}})");
  CHECK(accepts(*draft7, R"([1, "a", "b"])"));
  CHECK_FALSE(accepts(*draft7, R"([1, 2])"));
  auto any_items = schema(R"({"type": "array", "maxItems": 1})");
  CHECK(accepts(*any_items, R"([{"x": [null]}])"));
  CHECK_FALSE(accepts(*any_items, "[1, 2]"));
}

TEST_CASE("json schema: $ref, $defs, definitions and recursion", "[core][grammar]") {
  auto tree = schema(R"({
    "$defs": {"node": {"type": "object",
                       "properties": {"value": {"type": "integer"},
                                      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                       "required": ["value"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})");
  CHECK(accepts(*tree, R"({"value": 1})"));
  CHECK(accepts(*tree, R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]})"));
  CHECK_FALSE(accepts(*tree, R"({"value": 1, "children": [{"children": []}]})"));
  auto draft7 = schema(R"({"definitions": {"pos": {"type": "integer", "minimum": 1}},
                           "type": "array", "items": {"$ref": "#/definitions/pos"}})");
  CHECK(accepts(*draft7, "[1, 2]"));
  CHECK_FALSE(accepts(*draft7, "[0]"));
  auto self = schema(R"({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]})");
  CHECK(accepts(*self, "[1, [2, [3, []]]]"));
  CHECK_FALSE(accepts(*self, R"([1, ["x"]])"));
}

TEST_CASE("json schema: anyOf, oneOf and allOf", "[core][grammar]") {
  auto any = schema(R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 0}]})");
  CHECK(accepts(*any, R"("ab")"));
  CHECK(accepts(*any, "7"));
  CHECK_FALSE(accepts(*any, R"("abc")"));
  CHECK_FALSE(accepts(*any, "-7"));
  auto one = schema(R"({"oneOf": [{"const": "a"}, {"const": "b"}]})");
  CHECK(accepts(*one, R"("b")"));
  auto all = schema(R"({"allOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"properties": {"b": {"type": "string"}}, "required": ["b"]},
      {"properties": {"a": {"minimum": 10}}}]})");
  CHECK(accepts(*all, R"({"a": 10, "b": "x"})"));
  CHECK_FALSE(accepts(*all, R"({"a": 9, "b": "x"})"));
  CHECK_FALSE(accepts(*all, R"({"a": 10})"));
  auto err = schema_error(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})");
  CHECK_THAT(err.message, Catch::Contains("'type'"));
}

TEST_CASE("json schema: a member's additionalProperties speaks of names other members declare", "[core][grammar]") {
  // Closed member: 'c', declared only by the other member, is an additional property of
  // the first and so forbidden; 'b', declared by both, keeps both members' limits.
  auto closed = schema(R"({"allOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "additionalProperties": false},
      {"properties": {"b": {"minimum": 0, "maximum": 9}, "c": {"type": "boolean"}}}]})");
  CHECK(accepts(*closed, R"({"a": 1, "b": 9})"));
  CHECK_FALSE(accepts(*closed, R"({"b": 10})"));
  CHECK_FALSE(accepts(*closed, R"({"a": 1, "c": true})"));
  // Typed: the other member's 'm' must also be what additionalProperties says.
  auto typed = schema(R"({"allOf": [
      {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": {"type": "integer"}},
      {"properties": {"m": {"minimum": -5, "maximum": 5}}, "required": ["m"]}]})");
  CHECK(accepts(*typed, R"({"m": 5, "x": 7})"));
  CHECK_FALSE(accepts(*typed, R"({"m": "s"})"));
  CHECK_FALSE(accepts(*typed, R"({"m": 1, "x": "s"})"));
  // Closed beside allOf with nothing declared beside it: a required property makes the
  // schema admit no value; said, not compiled into something else.
  auto e = schema_error(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}],
                            "additionalProperties": false})");
  CHECK(e.code == errc::invalid_argument);
  CHECK_THAT(e.message, Catch::Contains("'a' is required") && Catch::Contains("additionalProperties"));
  // Optional ones are only dropped.
  auto dropped = schema(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}],
                            "additionalProperties": false})");
  CHECK(accepts(*dropped, "{}"));
  CHECK_FALSE(accepts(*dropped, R"({"a": "x"})"));
}

TEST_CASE("json schema: minLength equal to maxLength allows exactly that many characters", "[core][grammar]") {
  auto three = schema(R"({"type": "string", "minLength": 3, "maxLength": 3})");
  CHECK(accepts(*three, R"("abc")"));
  CHECK(accepts(*three, R"("a\"b")"));
  CHECK(accepts(*three, "\"日本語\""));
  CHECK_FALSE(accepts(*three, R"("ab")"));
  CHECK_FALSE(accepts(*three, R"("abcd")"));
  CHECK_FALSE(accepts(*three, R"("")"));
  auto one = schema(R"({"type": "string", "minLength": 1, "maxLength": 1})");
  CHECK(accepts(*one, R"("x")"));
  CHECK_FALSE(accepts(*one, R"("")"));
  CHECK_FALSE(accepts(*one, R"("xy")"));
  auto empty = schema(R"({"type": "string", "minLength": 0, "maxLength": 0})");
  CHECK(accepts(*empty, R"("")"));
  CHECK_FALSE(accepts(*empty, R"("x")"));
}

TEST_CASE("json schema: string length, pattern and format", "[core][grammar]") {
  auto len = schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK_FALSE(accepts(*len, R"("a")"));
  CHECK(accepts(*len, R"("ab")"));
  CHECK(accepts(*len, "\"日本語\""));         // code points, not bytes
  CHECK(accepts(*len, R"("a\"b")"));           // an escape is one character
  CHECK_FALSE(accepts(*len, R"("abcd")"));
  auto pat = schema(R"({"type": "string", "pattern": "^[a-z]+\\d$"})");
  CHECK(accepts(*pat, R"("abc1")"));
  CHECK_FALSE(accepts(*pat, R"("abc")"));
  CHECK_FALSE(accepts(*pat, R"("1abc1")"));
  auto search = schema(R"({"type": "string", "pattern": "ab"})");  // unanchored: contains
  CHECK(accepts(*search, R"("xxaby")"));
  CHECK_FALSE(accepts(*search, R"("xxa")"));
  auto quote = schema(R"({"type": "string", "pattern": "^a\"\\\\$"})");  // a " \ in the content
  CHECK(accepts(*quote, R"("a\"\\")"));
  CHECK_FALSE(accepts(*quote, R"("a"\")"));
  auto date = schema(R"({"type": "string", "format": "date"})");
  CHECK(accepts(*date, R"("2024-02-29")"));
  CHECK_FALSE(accepts(*date, R"("2024-13-01")"));
  CHECK_FALSE(accepts(*date, R"("2024-1-01")"));
  // Days as the month has them; February 29 only in leap years.
  for (const char* ok : {"2023-01-31", "2023-04-30", "2023-02-28", "2000-02-29", "1996-02-29", "0000-02-29"})
    CHECK(accepts(*date, "\"" + std::string(ok) + "\""));
  for (const char* bad : {"2023-04-31", "2023-11-31", "2023-02-29", "1900-02-29", "2023-02-30", "2023-06-31"})
    CHECK_FALSE(accepts(*date, "\"" + std::string(bad) + "\""));
  auto dt = schema(R"({"format": "date-time"})");
  CHECK(accepts(*dt, R"("2024-05-06T07:08:09.123Z")"));
  CHECK(accepts(*dt, R"("2024-05-06T23:59:59+05:30")"));
  // A leap second is valid only at 23:59:60 UTC: the pattern never writes second 60.
  CHECK_FALSE(accepts(*dt, R"("2024-05-06T06:10:60Z")"));
  CHECK_FALSE(accepts(*dt, R"("2023-02-29T00:00:00Z")"));
  CHECK_FALSE(accepts(*dt, R"("2024-05-06 07:08:09Z")"));
  auto time = schema(R"({"type": "string", "format": "time"})");
  CHECK(accepts(*time, R"("12:34:56Z")"));
  CHECK_FALSE(accepts(*time, R"("24:00:00Z")"));
  auto uuid = schema(R"({"type": "string", "format": "uuid"})");
  CHECK(accepts(*uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  CHECK_FALSE(accepts(*uuid, R"("123e4567e89b12d3a456426614174000")"));
  auto ip = schema(R"({"type": "string", "format": "ipv4"})");
  CHECK(accepts(*ip, R"("192.168.0.255")"));
  CHECK_FALSE(accepts(*ip, R"("256.1.1.1")"));
  CHECK_FALSE(accepts(*ip, R"("1.2.3")"));
  auto email = schema(R"({"type": "string", "format": "email"})");
  CHECK(accepts(*email, R"("first.last+tag@example.co.uk")"));
  CHECK_FALSE(accepts(*email, R"("no-at-sign.example.com")"));
  CHECK_FALSE(accepts(*email, R"("a@localhost")"));
}

TEST_CASE("json schema: the empty schema is any JSON value", "[core][grammar]") {
  for (const char* s : {"{}", "true", R"({"title": "anything", "description": "at all"})"}) {
    auto g = schema(s);
    for (const char* ok : {"1", "-2.5e3", R"("s")", "null", "false", "[]", "{}", R"({"a": [1, {"b": null}], "c": "d"})"})
      CHECK(accepts(*g, ok));
    for (const char* bad : {"", "nul", "[1,]", R"({"a"})", "{a: 1}", "'x'"}) CHECK_FALSE(accepts(*g, bad));
  }
}

TEST_CASE("json schema: annotations and extensions are ignored, unsupported keywords are errors with their path",
          "[core][grammar]") {
  auto g = schema(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "id": "y", "title": "t",
                      "description": "d", "examples": [1], "default": 1, "$comment": "c", "type": "integer",
                      "x-kubernetes-patch-strategy": "merge", "readonly": true, "faker": "name", "javaName": "N"})");
  CHECK(accepts(*g, "12"));
  CHECK_FALSE(accepts(*g, R"("12")"));
  // strict_keywords: an unknown keyword is refused, known annotations are not.
  json_schema_options strict;
  strict.is_strict_keywords = true;
  CHECK(grammar_from_json_schema(R"({"type": "integer", "title": "t", "$comment": "c"})", strict).has_value());
  auto e = grammar_from_json_schema(R"({"type": "object", "properties": {"a": {"javaName": "A"}}})", strict);
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message == "unknown JSON Schema keyword 'javaName' (strict_keywords) at /properties/a");
  auto f = grammar_from_json_schema(R"({"type": "string", "format": "color"})", strict);
  REQUIRE_FALSE(f.has_value());
  CHECK_THAT(f.error().message, Catch::Contains("format 'color' at /format"));
  CHECK(schema_error(R"({"properties": {"a": {"contains": {"type": "string"}}}})").message ==
        "unsupported JSON Schema keyword 'contains' at /properties/a");
  CHECK_THAT(schema_error(R"({"items": {"properties": {"a~b/c": {"minContains": 1}}}})").message,
             Catch::Contains("'minContains' at /items/properties/a~0b~1c"));
  CHECK_THAT(schema_error(R"({"$defs": {"x": {"unevaluatedProperties": false}}, "$ref": "#/$defs/x"})").message,
             Catch::Contains("'unevaluatedProperties' at /$defs/x"));
  CHECK_THAT(schema_error(R"({"not": {"pattern": "a"}})").message, Catch::Contains("'not' at /"));
  CHECK_THAT(schema_error(R"({"$ref": "https://example.com/s.json"})").message, Catch::Contains("only local $ref"));
  CHECK_THAT(schema_error(R"({"$ref": "#/$defs/missing"})").message, Catch::Contains("points at nothing"));
  CHECK_THAT(schema_error(R"({"type": "date"})").message, Catch::Contains("type 'date' at /type"));
  CHECK_THAT(schema_error(R"({"type": "string", "pattern": "(a)\\1"})").message, Catch::Contains("backreferences"));
  CHECK_THAT(schema_error(R"({"type": "array", "minItems": 3, "maxItems": 2})").message, Catch::Contains("minItems"));
  CHECK_THAT(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})").message, Catch::Contains("bounds"));
  CHECK_THAT(schema_error(R"({"enum": [1], "minimum": 2})").message, Catch::Contains("no value of 'enum'"));
  CHECK_THAT(schema_error(R"({"type": "number", "multipleOf": 0.01})").message, Catch::Contains("'multipleOf'"));
  CHECK_THAT(schema_error(R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true, "minItems": 2})").message,
             Catch::Contains("'uniqueItems'"));
  CHECK_THAT(schema_error("false").message, Catch::Contains("admits no value"));
  CHECK_THAT(schema_error("{not json").message, Catch::Contains("not valid JSON"));
  CHECK_THAT(schema_error(R"({"allOf": [{"$ref": "#"}]})").message, Catch::Contains("nesting"));
}

TEST_CASE("json schema: lengths beside a format or a pattern of several variable parts", "[core][grammar]") {
  // E-mail addresses of a bounded length: a subset whose parts carry the bounds.
  auto short_email = schema(R"({"type": "string", "format": "email", "maxLength": 12})");
  CHECK(accepts(*short_email, R"("ab@cd.ef")"));
  CHECK_FALSE(accepts(*short_email, R"("abcdef@ghij.kl")"));  // 14 characters
  CHECK_FALSE(accepts(*short_email, R"("no-at-sign")"));
  auto long_email = schema(R"({"type": "string", "format": "email", "minLength": 12, "maxLength": 100})");
  CHECK(accepts(*long_email, R"("abcdefgh@example.org")"));
  CHECK_FALSE(accepts(*long_email, R"("a@b.cd")"));  // 6 characters
  CHECK(schema_error(R"({"type": "string", "format": "email", "maxLength": 3})").message.find("not supported") !=
        std::string::npos);
  // A format every string of which fits the bounds keeps them as they are.
  CHECK(accepts(*schema(R"({"type": "string", "format": "date", "maxLength": 10})"), R"("2024-02-29")"));
  // Bounds every match of a pattern keeps say nothing more: two variable parts are fine.
  auto url = schema(R"({"type": "string", "minLength": 6, "pattern": "^(http|https)://"})");
  CHECK(accepts(*url, R"("https://x.org/a")"));
  CHECK_FALSE(accepts(*url, R"("ftp://x")"));
  auto dest = schema(R"({"type": "string", "minLength": 1, "pattern": "^(http://|https://|/)\\S*?$"})");
  CHECK(accepts(*dest, R"("/")"));
  CHECK_FALSE(accepts(*dest, R"("")"));
  // An unanchored end anchored (a subset) where that is what fits the length.
  auto id = schema(R"({"type": "string", "minLength": 12, "maxLength": 12, "pattern": "[0-9a-fA-F]+"})");
  CHECK(accepts(*id, R"("0123456789ab")"));
  CHECK_FALSE(accepts(*id, R"("0123456789a")"));
  CHECK_FALSE(accepts(*id, R"("0123456789ag")"));
}
