#pragma once
/// Values from JSON (the render context) and values as JSON text (the `tojson` filter,
/// which writes what Python's json.dumps writes with ensure_ascii=False).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/model/template/value.hpp"

namespace inflight::jinja {

/// How deeply JSON input and template-built values may nest.
constexpr int max_value_nesting = 64;

/// A value from JSON: objects keep their key order (ordered_json keeps the document's;
/// json sorts keys). Errors (invalid_argument) when it nests deeper than max_value_nesting.
result<value> try_from_json(const nlohmann::ordered_json& j);
result<value> try_from_json(const nlohmann::json& j);

/// json.dumps options: indent (none = one line), separators and sort_keys.
struct json_format {
  std::optional<int> indent;
  std::string item_separator = ", ";  ///< "," when indenting, as Python does
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  ///< write non-ASCII characters as \uXXXX escapes
};

/// JSON text of `v`. Undefined values and functions are not serializable (an error), as in Python.
result<std::string> try_to_json_text(const value& v, const json_format& format);

}  // namespace inflight::jinja
