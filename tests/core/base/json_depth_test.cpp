#include <catch2/catch.hpp>

#include <string>

#include "core/base/json_depth.hpp"

using inflight::json_nests_deeper_than;

TEST_CASE("json depth counts nested arrays and objects, not brackets in strings", "[core][json]") {
  CHECK_FALSE(json_nests_deeper_than("", 0));
  CHECK_FALSE(json_nests_deeper_than("1", 0));
  CHECK(json_nests_deeper_than("[]", 0));
  CHECK_FALSE(json_nests_deeper_than("[]", 1));
  CHECK_FALSE(json_nests_deeper_than(R"({"a": [1, {"b": []}], "c": {}})", 4));
  CHECK(json_nests_deeper_than(R"({"a": [1, {"b": []}], "c": {}})", 3));
  // Siblings do not add up; only nesting does.
  CHECK_FALSE(json_nests_deeper_than("[[],[],[],[],[]]", 2));
  // Brackets inside strings, escaped quotes included, are text.
  CHECK_FALSE(json_nests_deeper_than(R"(["[[[[", "\"[[[", "\\", "{{"])", 1));
  CHECK(json_nests_deeper_than(R"(["\\", [[]]])", 2));
  const int limit = inflight::max_json_depth;
  CHECK_FALSE(json_nests_deeper_than(std::string(limit, '[') + std::string(limit, ']')));
  CHECK(json_nests_deeper_than(std::string(limit + 1, '[') + std::string(limit + 1, ']')));
  // Unbalanced or truncated text is measured as far as it goes.
  CHECK(json_nests_deeper_than(std::string(1000000, '[')));
  CHECK_FALSE(json_nests_deeper_than("]]]]][", 1));
}
