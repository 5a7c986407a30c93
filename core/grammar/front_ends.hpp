#pragma once
/// The front-ends: each turns one way of writing a constraint into a `grammar`.
/// Pure functions of their input, safe to call from any thread (e.g. off the step loop).
/// The dialects are described in docs/structured-outputs.md.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/base/error.hpp"
#include "core/grammar/grammar.hpp"

namespace inflight {

/// GBNF as llama.cpp writes it; the start rule is `root`.
result<grammar> grammar_from_gbnf(std::string_view text);

/// A regular expression that must match the whole output (anchors are implicit).
result<grammar> grammar_from_regex(std::string_view pattern);

/// Exactly one of `choices`.
result<grammar> grammar_from_choices(std::span<const std::string> choices);

/// How a JSON Schema is compiled.
struct json_schema_options {
  /// Refuse keywords and `format` values that are neither enforced nor known annotations
  /// (by default they validate nothing and are ignored, as the specification says).
  bool is_strict_keywords = false;
};

/// JSON text valid against the JSON Schema `schema_text` (itself JSON).
result<grammar> grammar_from_json_schema(std::string_view schema_text, const json_schema_options& options = {});

/// How framed JSON values are written: between `min_items` and `max_items` (none = no
/// limit) values valid against `schema`, each as `begin` + compact JSON + `end`, with
/// `separator` between them. Tool calls: `<tool_call>\n{...}\n</tool_call>` repeated.
struct framed_json_spec {
  std::string schema;  ///< a JSON Schema (JSON text)
  std::string begin, end, separator;
  std::uint32_t min_items = 1;
  std::optional<std::uint32_t> max_items = 1;
};

/// The grammar of `spec`; schema errors name the keyword and its path in `schema`.
result<grammar> grammar_from_framed_json(const framed_json_spec& spec);
/// The same from its JSON text (grammar_kind::framed_json):
///   {"schema": {...}, "begin": "", "end": "", "separator": "", "min_items": 1, "max_items": 1 | null}
result<grammar> grammar_from_framed_json(std::string_view spec_text);
/// The JSON text of `spec` (what grammar_from_framed_json(std::string_view) reads).
std::string to_json_text(const framed_json_spec& spec);

/// The expression of `pattern` over code points (UTF-8 bytes); for the front-ends that
/// embed a regex (JSON Schema `pattern`, `format`).
result<gexpr> regex_to_gexpr(std::string_view pattern);

}  // namespace inflight
