#pragma once
/// The front-ends: each turns one way of writing a constraint into a `grammar`.
/// Pure functions of their input, safe to call from any thread (e.g. off the step loop).
/// The dialects are described in docs/structured-outputs.md.

#include <span>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/grammar/grammar.hpp"

namespace inflight {

/// GBNF as llama.cpp writes it; the start rule is `root`.
result<grammar> grammar_from_gbnf(std::string_view text);

/// A regular expression that must match the whole output (anchors are implicit).
result<grammar> grammar_from_regex(std::string_view pattern);

/// Exactly one of `choices`.
result<grammar> grammar_from_choices(std::span<const std::string> choices);

/// JSON text valid against the JSON Schema `schema_text` (itself JSON).
result<grammar> grammar_from_json_schema(std::string_view schema_text);

/// The expression of `pattern` over code points (UTF-8 bytes); for the front-ends that
/// embed a regex (JSON Schema `pattern`, `format`).
result<gexpr> regex_to_gexpr(std::string_view pattern);

}  // namespace inflight
