#pragma once
/// What a request asked to constrain its output with: the front-end and its text. The
/// compiled form (token_index) remembers it, so that it can be sent to an engine in
/// another process and compiled there again.

#include <cstdint>
#include <string>

namespace inflight {

enum class grammar_kind : std::uint8_t {
  gbnf,         ///< llama.cpp GBNF, start rule `root`
  regex,        ///< a regular expression matching the whole output
  choice,       ///< a JSON array of strings: exactly one of them
  json_schema,  ///< a JSON Schema: JSON text valid against it
  /// JSON values valid against a schema, each framed by fixed texts (tool calls):
  /// {"schema", "begin", "end", "separator", "min_items", "max_items"} (see framed_json_spec)
  framed_json,
};

/// "gbnf", "regex", "choice", "json_schema", "framed_json".
const char* to_string(grammar_kind kind);

struct grammar_spec {
  grammar_kind kind = grammar_kind::gbnf;
  std::string text;
  friend bool operator==(const grammar_spec&, const grammar_spec&) = default;
};

}  // namespace inflight
