#pragma once
/// The JSON Schema front-end's compiler, shared by its two files: json_schema.cpp
/// (dispatch, references, combinators, scalars) and json_schema_objects.cpp (objects,
/// arrays, any JSON value).

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/grammar/front_ends.hpp"
#include "core/grammar/grammar.hpp"
#include "core/grammar/json_schema_internal.hpp"

namespace inflight::json_schema_detail {

using ojson = nlohmann::ordered_json;

inline const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> k{"title",   "description", "examples", "$schema",  "$id",
                                       "default", "$comment",    "deprecated", "readOnly", "writeOnly"};
  return k;
}

inline const std::set<std::string>& used_keywords() {
  static const std::set<std::string> k{
      "type",      "enum",      "const",    "anyOf",     "oneOf",   "allOf",   "$ref",
      "$defs",     "definitions", "properties", "required", "additionalProperties", "items",
      "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
      "pattern",   "format",    "minimum",  "maximum",   "exclusiveMinimum", "exclusiveMaximum"};
  return k;
}

inline std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

inline std::string show(const std::string& path) { return path.empty() ? "/" : path; }

inline std::unexpected<error> unsupported(const std::string& what, const std::string& path) {
  return make_error(errc::unsupported, what + " at " + show(path));
}

inline std::unexpected<error> invalid(const std::string& what, const std::string& path) {
  return make_error(errc::invalid_argument, "invalid JSON Schema: " + what + " at " + show(path));
}

inline bool has_any(const ojson& s, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (s.contains(k)) return true;
  return false;
}

inline bool type_matches(const ojson& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

class schema_compiler {
 public:
  explicit schema_compiler(const ojson& root) : root_(root) {}

  result<grammar> compile();
  /// root ::= item (separator item){min-1,max-1}; item ::= begin value end.
  result<grammar> compile_framed(const framed_json_spec& frame);

 private:
  // --- dispatch -------------------------------------------------------------------

  // Nesting guard: allOf over "#" and similar self-merges would otherwise never end.
  static constexpr int max_depth = 128;

  result<gexpr> schema(const ojson& s, const std::string& path);

  result<gexpr> schema_at_depth(const ojson& s, const std::string& path);

  // Keywords that only hold other schemas or annotate may sit beside a combinator.
  result<void> only_beside(const ojson& s, const std::string& keyword, const std::string& path,
                           std::initializer_list<const char*> allowed);

  result<std::vector<std::string>> types_of(const ojson& s, const std::string& path);

  result<gexpr> typed(const ojson& s, const std::string& type, const std::string& path);

  // --- references and combinators ---------------------------------------------------

  result<const ojson*> resolve(const std::string& ref, const std::string& path);

  result<gexpr> ref(const ojson& s, const std::string& path);

  result<gexpr> any_of(const ojson& s, const std::string& path);

  // allOf: its members (and the keywords beside it) merged into one schema; properties of
  // the same name merge recursively, required lists unite, any other keyword must agree.
  result<gexpr> all_of(const ojson& s, const std::string& path);

  result<void> merge_into(ojson& merged, const ojson& m, const std::string& path);
  result<void> apply_member_additional_properties(ojson& merged,
                                                  const std::vector<std::pair<const ojson*, std::string>>& members);

  result<gexpr> enum_values(const ojson& s, const std::string& path);

  // --- scalars ------------------------------------------------------------------------

  result<std::optional<std::uint32_t>> count_keyword(const ojson& s, const char* key, const std::string& path);

  static constexpr std::uint32_t json_text_max_count = 10000;

  result<gexpr> string_schema(const ojson& s, const std::string& path);

  // JSON Schema patterns search (ECMA-262): an unanchored side may have any text around it.
  result<gexpr> pattern_string(std::string pattern, const std::string& path);

  result<std::optional<json_text::number_bound>> bound(const ojson& s, const char* key, const char* excl_key,
                                                      bool is_lower, bool is_integer, const std::string& path);

  result<gexpr> integer_schema(const ojson& s, const std::string& path);

  result<gexpr> number_schema(const ojson& s, const std::string& path);

  // --- objects and arrays -------------------------------------------------------------

  result<gexpr> object_schema(const ojson& s, const std::string& path);
  result<gexpr> array_schema(const ojson& s, const std::string& path);

  /// `e` as a named rule, so that repeating it copies one reference.
  std::uint32_t as_rule(gexpr e, const std::string& name);

  result<std::uint32_t> sub_schema_rule(const ojson& s, const std::string& path);

  // --- any JSON value -----------------------------------------------------------------

  std::uint32_t any_value();
  std::uint32_t string_rule();
  std::uint32_t number_rule();

  const ojson& root_;
  grammar_builder b_;
  std::map<std::string, std::uint32_t> ref_rules_;
  std::optional<std::uint32_t> any_value_;
  std::optional<std::uint32_t> string_;
  std::optional<std::uint32_t> number_;
  int depth_ = 0;
};

}  // namespace inflight::json_schema_detail
