// The keywords real-world schemas use beyond the core set: patternProperties, property
// counts, dependencies, conditionals, not, uniqueItems, multipleOf, formats, $ref with
// keywords beside it, large lengths. Each is enforced exactly or by a subset of its
// language; the cases below hold both directions.
#include <catch2/catch.hpp>

#include "tests/core/grammar/grammar_test_util.hpp"

using namespace inflight;
using grammar_test::accepts;
using grammar_test::must;

namespace {

std::shared_ptr<const grammar> schema(std::string_view text) { return must(grammar_from_json_schema(text)); }

}  // namespace

TEST_CASE("json schema: patternProperties name extra members and constrain matching declared ones", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"name": {"type": "string"}, "x-id": {"type": "integer"}},
                      "patternProperties": {"^x-": {"type": "integer", "minimum": 0}}, "additionalProperties": false})");
  CHECK(accepts(*g, R"({"name":"a"})"));
  CHECK(accepts(*g, R"({"name":"a","x-id":3})"));
  CHECK_FALSE(accepts(*g, R"({"name":"a","x-id":-3})"));  // x-id matches ^x-: minimum 0 applies too
  CHECK_FALSE(accepts(*g, R"({"name":"a","y":1})"));
  // The declared x-id matches the pattern, so the pattern names no other members (no duplicate).
  CHECK_FALSE(accepts(*g, R"({"name":"a","x-other":1})"));
  auto map = schema(R"({"type": "object", "patternProperties": {"^[a-z]+$": {"type": "boolean"}}})");
  CHECK(accepts(*map, "{}"));
  CHECK(accepts(*map, R"({"abc":true,"d":false})"));
  CHECK_FALSE(accepts(*map, R"({"Abc":true})"));
  CHECK_FALSE(accepts(*map, R"({"abc":1})"));
}

TEST_CASE("json schema: minProperties and maxProperties count every member", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                      "c": {"type": "integer"}}, "minProperties": 1, "maxProperties": 2})");
  CHECK_FALSE(accepts(*g, "{}"));
  CHECK(accepts(*g, R"({"b":1})"));
  CHECK(accepts(*g, R"({"a":1,"c":2})"));
  CHECK_FALSE(accepts(*g, R"({"a":1,"b":2,"c":3})"));
  auto extra = schema(R"({"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 2,
                          "maxProperties": 3})");
  CHECK_FALSE(accepts(*extra, R"({"k":"v"})"));
  CHECK(accepts(*extra, R"({"k":"v","l":"w"})"));
  CHECK(accepts(*extra, R"({"k":"v","l":"w","m":"x"})"));
  CHECK_FALSE(accepts(*extra, R"({"k":"v","l":"w","m":"x","n":"y"})"));
}

TEST_CASE("json schema: dependentRequired, dependencies and dependentSchemas", "[core][grammar]") {
  // The dependents of a name that may be written become required (a subset).
  auto g = schema(R"({"type": "object", "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
                      "dependentRequired": {"card": ["billing"]}})");
  CHECK(accepts(*g, R"({"billing":"x"})"));
  CHECK(accepts(*g, R"({"card":"1","billing":"x"})"));
  CHECK_FALSE(accepts(*g, R"({"card":"1"})"));
  auto old = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "dependencies": {"a": {"required": ["b"]}}})");
  CHECK(accepts(*old, R"({"b":1})"));
  CHECK_FALSE(accepts(*old, R"({"a":1})"));
}

TEST_CASE("json schema: if/then/else by merging then and else, or if and then", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}},
                      "if": {"properties": {"kind": {"const": "big"}}}, "then": {"properties": {"n": {"minimum": 100}}},
                      "else": {"properties": {"n": {"maximum": 200}}}})");
  CHECK(accepts(*g, R"({"kind":"big","n":150})"));
  CHECK_FALSE(accepts(*g, R"({"kind":"big","n":50})"));   // then fails
  CHECK_FALSE(accepts(*g, R"({"kind":"small","n":500})"));  // else fails
  // then and else disagree on a const: if and then together.
  auto h = schema(R"({"type": "object", "properties": {"t": {"enum": ["a", "b"]}, "v": {}}, "required": ["t", "v"],
                      "if": {"properties": {"t": {"const": "a"}}}, "then": {"properties": {"v": {"const": 1}}},
                      "else": {"properties": {"v": {"const": 2}}}})");
  CHECK(accepts(*h, R"({"t":"a","v":1})"));
  CHECK_FALSE(accepts(*h, R"({"t":"b","v":1})"));
  CHECK_FALSE(accepts(*h, R"({"t":"a","v":2})"));
}

TEST_CASE("json schema: not of required lists, of types, and not {}", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "not": {"required": ["a", "b"]}})");
  CHECK(accepts(*g, R"({"b":1})"));
  CHECK_FALSE(accepts(*g, R"({"a":1,"b":2})"));
  auto t = schema(R"({"type": ["string", "integer", "null"], "not": {"type": "null"}})");
  CHECK(accepts(*t, R"("s")"));
  CHECK(accepts(*t, "3"));
  CHECK_FALSE(accepts(*t, "null"));
  auto forbidden = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "old": {"not": {}}},
                              "additionalProperties": false})");
  CHECK(accepts(*forbidden, R"({"a":1})"));
  CHECK_FALSE(accepts(*forbidden, R"({"old":1})"));
}

TEST_CASE("json schema: uniqueItems over enum items, multipleOf, large bounds", "[core][grammar]") {
  auto u = schema(R"({"type": "array", "items": {"enum": ["r", "g", "b"]}, "uniqueItems": true, "minItems": 1})");
  CHECK(accepts(*u, R"(["r","b"])"));
  CHECK(accepts(*u, R"(["r","g","b"])"));
  CHECK_FALSE(accepts(*u, R"(["r","r"])"));
  CHECK_FALSE(accepts(*u, "[]"));
  auto one = schema(R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true})");
  CHECK(accepts(*one, R"(["x"])"));
  CHECK_FALSE(accepts(*one, R"(["x","y"])"));  // a subset: at most one element
  auto m = schema(R"({"type": "integer", "multipleOf": 7})");
  for (const char* ok : {"0", "7", "-14", "700", "343"}) CHECK(accepts(*m, ok));
  for (const char* bad : {"1", "8", "-15", "701", "1234567890123456"}) CHECK_FALSE(accepts(*m, bad));
  auto mb = schema(R"({"type": "integer", "multipleOf": 5, "minimum": 3, "maximum": 22})");
  for (const char* ok : {"5", "10", "20"}) CHECK(accepts(*mb, ok));
  for (const char* bad : {"0", "3", "25"}) CHECK_FALSE(accepts(*mb, bad));
  auto big = schema(R"({"type": "integer", "minimum": 0, "maximum": 18446744073709551615})");
  CHECK(accepts(*big, "1000000000000000000"));
  CHECK_FALSE(accepts(*big, "-1"));
  auto frac = schema(R"({"type": "number", "minimum": 0.5, "maximum": 9.5})");
  CHECK(accepts(*frac, "1"));
  CHECK(accepts(*frac, "8.75"));
  CHECK_FALSE(accepts(*frac, "0.7"));  // a subset: bounds rounded inward to 1 and 9
  CHECK_FALSE(accepts(*frac, "9.2"));
  auto i32 = schema(R"({"type": "integer", "format": "int32"})");
  CHECK(accepts(*i32, "2147483647"));
  CHECK_FALSE(accepts(*i32, "2147483648"));
}

TEST_CASE("json schema: maxLength past 10000 is exact without a grammar that size", "[core][grammar]") {
  auto g = must(grammar_from_json_schema(R"({"type": "string", "minLength": 600, "maxLength": 70000})"));
  CHECK(g->elements().size() < 100000);
  CHECK_FALSE(accepts(*g, "\"" + std::string(599, 'a') + "\""));
  CHECK(accepts(*g, "\"" + std::string(600, 'a') + "\""));
  CHECK(accepts(*g, "\"" + std::string(1000, 'a') + "\""));
  CHECK(accepts(*g, "\"" + std::string(70000, 'a') + "\""));
  CHECK_FALSE(accepts(*g, "\"" + std::string(70001, 'a') + "\""));
  auto p = schema(R"({"type": "string", "pattern": "^[a-z]+$", "maxLength": 4})");
  CHECK(accepts(*p, R"("abcd")"));
  CHECK_FALSE(accepts(*p, R"("abcde")"));
  CHECK_FALSE(accepts(*p, R"("")"));
}

TEST_CASE("json schema: formats used in the wild", "[core][grammar]") {
  const auto fmt = [](const char* f) { return schema(std::string(R"({"type": "string", "format": ")") + f + "\"}"); };
  auto byte = fmt("byte");
  CHECK(accepts(*byte, R"("aGVsbG8=")"));
  CHECK(accepts(*byte, R"("")"));
  CHECK_FALSE(accepts(*byte, R"("aGVsbG8")"));
  auto uri = fmt("uri");
  CHECK(accepts(*uri, R"("https://example.com/a/b?x=1#top")"));
  CHECK_FALSE(accepts(*uri, R"("example.com")"));
  auto host = fmt("hostname");
  CHECK(accepts(*host, R"("api.example-1.com")"));
  CHECK_FALSE(accepts(*host, R"("-bad.com")"));
  auto v6 = fmt("ipv6");
  CHECK(accepts(*v6, R"("2001:db8:0:0:0:0:0:1")"));
  CHECK_FALSE(accepts(*v6, R"("2001:db8")"));
  auto dur = fmt("duration");
  CHECK(accepts(*dur, R"("P1Y2M3DT4H5M6S")"));
  CHECK(accepts(*dur, R"("PT5M")"));
  CHECK_FALSE(accepts(*dur, R"("P")"));
  CHECK_FALSE(accepts(*dur, R"("PT")"));
  auto unknown = fmt("color");  // an annotation: any string
  CHECK(accepts(*unknown, R"("red")"));
}

TEST_CASE("json schema: $ref with keywords beside it, anyOf with keywords beside it", "[core][grammar]") {
  auto g = schema(R"({"$defs": {"name": {"type": "string", "minLength": 1}},
                      "type": "object", "properties": {"n": {"$ref": "#/$defs/name", "maxLength": 3,
                      "description": "short"}}, "required": ["n"]})");
  CHECK(accepts(*g, R"({"n":"abc"})"));
  CHECK_FALSE(accepts(*g, R"({"n":"abcd"})"));
  CHECK_FALSE(accepts(*g, R"({"n":""})"));
  auto a = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})");
  CHECK(accepts(*a, R"({"a":1})"));
  CHECK(accepts(*a, R"({"b":1})"));
  CHECK_FALSE(accepts(*a, "{}"));
  CHECK(accepts(*schema(R"({"$ref": "#/definitions/a%20b", "definitions": {"a b": {"type": "null"}}})"), "null"));
}

TEST_CASE("json schema: patterns keep ECMA-262's dot and white space", "[core][grammar]") {
  auto dot = schema(R"({"type": "string", "pattern": "^.+$"})");
  CHECK(accepts(*dot, R"("a b")"));
  CHECK_FALSE(accepts(*dot, R"("a\rb")"));
  CHECK_FALSE(accepts(*dot, R"("a\nb")"));
  CHECK_FALSE(accepts(*dot, "\"a\xE2\x80\xA8" "b\""));  // U+2028
  auto non_space = schema(R"({"type": "string", "pattern": "^\\S+$"})");
  CHECK(accepts(*non_space, R"("abc")"));
  CHECK_FALSE(accepts(*non_space, "\"a\xC2\xA0" "b\""));  // U+00A0 is a space to ECMA-262
  auto negated = schema(R"({"type": "string", "pattern": "^[^\\s,]+$"})");
  CHECK(accepts(*negated, R"("ab")"));
  CHECK_FALSE(accepts(*negated, "\"a\xE3\x80\x80" "b\""));  // U+3000
  CHECK_FALSE(accepts(*negated, R"("a,b")"));
}

TEST_CASE("json schema: oneOf of required lists is exclusive", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"name": {"type": "string"}, "url": {"type": "string"},
                      "style": {"type": "string"}}, "additionalProperties": false,
                      "oneOf": [{"required": ["name", "url"]}, {"required": ["name", "style"]}]})");
  CHECK(accepts(*g, R"({"name":"a","url":"u"})"));
  CHECK(accepts(*g, R"({"name":"a","style":"s"})"));
  CHECK_FALSE(accepts(*g, R"({"name":"a","url":"u","style":"s"})"));  // valid against both: not oneOf
  CHECK_FALSE(accepts(*g, R"({"name":"a"})"));
}

TEST_CASE("json schema: a dependent schema that cannot be merged leaves its property out", "[core][grammar]") {
  auto g = schema(R"({"allOf": [{"type": "object", "properties": {"type": {"enum": ["site", "section"]},
                      "website": {"type": "string"}}, "dependencies": {"website": {"properties": {"type": {"enum": ["section"]}}}}},
                      {"properties": {"type": {"enum": ["site"]}}}], "required": ["type"]})");
  CHECK(accepts(*g, R"({"type":"site"})"));
  CHECK_FALSE(accepts(*g, R"({"type":"site","website":"w"})"));  // website would require type section
  CHECK_FALSE(accepts(*g, R"({"type":"section"})"));
}

TEST_CASE("json schema: allOf of two conditionals", "[core][grammar]") {
  auto g = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "required": ["a", "b"], "allOf": [
                        {"if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": {"minimum": 5}}}},
                        {"if": {"properties": {"a": {"const": 2}}}, "then": {"properties": {"b": {"maximum": 7}}}}]})");
  CHECK(accepts(*g, R"({"a":1,"b":6})"));
  CHECK_FALSE(accepts(*g, R"({"a":1,"b":4})"));
  CHECK_FALSE(accepts(*g, R"({"a":2,"b":8})"));
}
