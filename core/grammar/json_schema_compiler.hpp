#pragma once
/// The JSON Schema front-end's compiler, shared by its files: json_schema.cpp (dispatch,
/// scalars), json_schema_combine.cpp (references, combinators, merging),
/// json_schema_rewrite.cpp (if/then/else, dependentSchemas, not), json_schema_objects.cpp
/// (objects, any JSON value), json_schema_arrays.cpp and json_schema_formats.cpp.

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

/// Keywords that validate nothing: the specification's annotations and the vocabulary
/// keywords. Under `is_strict_keywords` only these (and the used ones) are accepted.
inline const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> k{
      "title",    "description", "examples", "$schema",  "$id",        "id",         "default",
      "$comment", "deprecated",  "readOnly", "writeOnly", "$anchor",   "$vocabulary", "contentEncoding",
      "contentMediaType", "contentSchema", "nullable", "example", "discriminator", "$dynamicAnchor"};
  return k;
}

/// Keywords this compiler enforces (exactly, or by a documented subset of their language).
inline const std::set<std::string>& used_keywords() {
  static const std::set<std::string> k{
      "type",          "enum",        "const",         "anyOf",        "oneOf",         "allOf",
      "$ref",          "$defs",       "definitions",   "properties",   "required",      "additionalProperties",
      "items",         "prefixItems", "additionalItems", "minItems",   "maxItems",      "minLength",
      "maxLength",     "pattern",     "format",        "minimum",      "maximum",       "exclusiveMinimum",
      "exclusiveMaximum", "patternProperties", "minProperties", "maxProperties", "dependentRequired",
      "dependentSchemas", "dependencies", "if", "then", "else", "uniqueItems", "propertyNames", "multipleOf", "not"};
  return k;
}

/// Keywords that validate but are not enforced: always an error naming them.
inline const std::set<std::string>& refused_keywords() {
  static const std::set<std::string> k{"contains",        "minContains",  "maxContains",
                                       "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"};
  return k;
}

/// A keyword that neither validates here nor is refused: an annotation or an extension,
/// ignored (unless strict).
inline bool is_ignored_keyword(const std::string& key) {
  return !used_keywords().contains(key) && !refused_keywords().contains(key);
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

/// Schemas with the JSON pointer of each, as allOf's members are listed.
using member_list = std::vector<std::pair<const ojson*, std::string>>;

// Keywords beside `keyword` that validate (annotations, extensions and definitions do not).
inline bool has_validating_siblings(const ojson& s, const std::string& keyword) {
  for (const auto& [key, value] : s.items()) {
    if (key == keyword || key == "$defs" || key == "definitions") continue;
    if (!is_ignored_keyword(key)) return true;
  }
  return false;
}

// The names of {"required": [...]} (annotations aside), or nullopt for any other schema.
inline std::optional<std::vector<std::string>> required_only(const ojson& s) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return std::nullopt;
  for (const auto& [key, value] : s.items())
    if (key != "required" && !is_ignored_keyword(key)) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& x : s["required"]) {
    if (!x.is_string()) return std::nullopt;
    names.push_back(x.get<std::string>());
  }
  return names;
}

/// `false`, `{"not": {}}`, or an allOf holding one of them: a schema no value satisfies
/// (a property that must not be written).
inline bool is_false_schema(const ojson& s) {
  if (s.is_boolean()) return !s.get<bool>();
  if (!s.is_object()) return false;
  if (s.contains("not") && (s["not"] == true || s["not"] == ojson::object())) return true;
  if (s.contains("allOf") && s["allOf"].is_array())
    for (const auto& m : s["allOf"])
      if (is_false_schema(m)) return true;
  return false;
}

class schema_compiler {
 public:
  schema_compiler(const ojson& root, const json_schema_options& options) : root_(root), options_(options) {}

  result<grammar> compile();
  /// root ::= item (separator item){min-1,max-1}; item ::= begin value end.
  result<grammar> compile_framed(const framed_json_spec& frame);

 private:
  // --- dispatch (json_schema.cpp) ---------------------------------------------------

  // Nesting guard: allOf over "#" and similar self-merges would otherwise never end.
  static constexpr int max_depth = 128;

  result<gexpr> schema(const ojson& s, const std::string& path);

  result<gexpr> schema_at_depth(const ojson& s, const std::string& path);

  result<void> check_keywords(const ojson& s, const std::string& path) const;

  result<std::vector<std::string>> types_of(const ojson& s, const std::string& path);

  result<gexpr> typed(const ojson& s, const std::string& type, const std::string& path);

  // --- references and combinators (json_schema_combine.cpp) -------------------------

  result<const ojson*> resolve(const std::string& ref, const std::string& path);

  result<gexpr> ref(const ojson& s, const std::string& path);

  result<gexpr> any_of(const ojson& s, const std::string& path);

  // allOf: its members (and the keywords beside it) merged into one schema; properties of
  // the same name merge recursively, required lists unite, any other keyword must agree.
  result<gexpr> all_of(const ojson& s, const std::string& path);

  /// The members merged into one schema ($refs followed), or the reason they cannot be.
  result<ojson> merge_members(const member_list& members);
  result<void> merge_into(ojson& merged, const ojson& m, const std::string& path);
  result<void> apply_member_additional_properties(ojson& merged, const member_list& members);

  // if/then/else, dependentSchemas, not: rewritten into other keywords (json_schema_rewrite.cpp).
  result<gexpr> conditional(const ojson& s, const std::string& path);
  result<ojson> without_conditional(const ojson& s, const std::string& path);
  result<gexpr> dependent_schemas(const ojson& s, const std::string& path);

  result<gexpr> enum_values(const ojson& s, const std::string& path);

  result<ojson> without_not(const ojson& s, const std::string& path);

  /// Whether `value`, written compactly, is in the language compiled from `s`: a
  /// sufficient test of validity (that language is a subset of the schema's).
  result<bool> is_valid_value(const ojson& s, const ojson& value, const std::string& path);

  // --- scalars (json_schema.cpp) ------------------------------------------------------

  result<std::optional<std::uint32_t>> count_keyword(const ojson& s, const char* key, const std::string& path);

  /// Counts past this are written as repetitions of blocks (json_text::counted).
  static constexpr std::uint32_t json_text_max_count = 1000000000;

  result<gexpr> string_schema(const ojson& s, const std::string& path);
  result<std::optional<gexpr>> format_string(const ojson& s, bool has_length, const std::string& path);

  // JSON Schema patterns search (ECMA-262): an unanchored side may have any text around it.
  // With a length: the pattern's one variable part repeats a single character (see
  // json_text::fit_length).
  result<gexpr> pattern_string(std::string pattern, const std::string& path, std::uint32_t min_length = 0,
                               std::optional<std::uint32_t> max_length = std::nullopt);

  result<std::optional<json_text::number_bound>> bound(const ojson& s, const char* key, const char* excl_key,
                                                      bool is_lower, bool is_integer, const std::string& path);

  result<gexpr> integer_schema(const ojson& s, const std::string& path);

  result<gexpr> number_schema(const ojson& s, const std::string& path);

  result<gexpr> multiple_of(const ojson& k, std::optional<std::int64_t> lo, std::optional<std::int64_t> hi,
                            const std::string& path);

  // --- objects and arrays (json_schema_objects.cpp, json_schema_arrays.cpp) -----------

  result<gexpr> object_schema(const ojson& s, const std::string& path);
  result<gexpr> array_schema(const ojson& s, const std::string& path);
  result<std::optional<gexpr>> unique_values(const ojson& items, std::uint32_t lo, std::optional<std::uint32_t> hi,
                                             const std::string& path);

  result<void> dependent_required(const ojson& s, const std::string& path, std::vector<std::string>& names,
                                  std::set<std::string>& required, std::set<std::string>& excluded);
  result<bool> may_match(const std::string& pattern, const std::string& name, const std::string& path);
  result<std::optional<std::uint32_t>> merged_rule(const member_list& members, const std::string& path);
  result<std::uint32_t> value_rule(const std::vector<const ojson*>& schemas, const std::string& path);
  result<std::optional<gexpr>> other_members(const ojson& s, const ojson* extra, const std::vector<std::string>& taken,
                                             const std::string& path);

  /// Members in order (each required or optional), then any number of `extra` ones, with
  /// "," and a space between them, and between lo and hi members in all.
  result<gexpr> member_list_expr(const std::vector<gexpr>& members, const std::vector<bool>& is_required,
                                 const std::optional<gexpr>& extra, std::uint32_t lo, std::optional<std::uint32_t> hi,
                                 const std::string& name);

  /// `e` as a named rule, so that repeating it copies one reference.
  std::uint32_t as_rule(gexpr e, const std::string& name);

  result<std::uint32_t> sub_schema_rule(const ojson& s, const std::string& path);

  // --- any JSON value -----------------------------------------------------------------

  std::uint32_t any_value();
  std::uint32_t string_rule();
  std::uint32_t number_rule();

  const ojson& root_;
  json_schema_options options_;
  grammar_builder b_;
  std::map<std::string, std::uint32_t> ref_rules_;
  std::optional<std::uint32_t> any_value_;
  std::optional<std::uint32_t> string_;
  std::optional<std::uint32_t> number_;
  int depth_ = 0;
};

}  // namespace inflight::json_schema_detail
