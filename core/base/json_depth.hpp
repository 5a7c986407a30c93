#pragma once
/// A bound on the nesting of JSON texts from outside (request bodies, model files).
/// nlohmann::json parses any depth, but copying, dumping and comparing a value recurse
/// once per level: a 200 KB body of brackets overflows the stack. Texts are checked with
/// json_nests_deeper_than before they are parsed.

#include <string_view>

namespace inflight {

/// Deepest nesting of arrays and objects any accepted JSON text may have. Real request
/// bodies and model files stay under 10 levels.
inline constexpr int max_json_depth = 64;

/// True when `text` opens more than `limit` arrays / objects inside each other (brackets
/// inside strings do not count). Linear, no allocation; `text` need not be valid JSON.
bool json_nests_deeper_than(std::string_view text, int limit = max_json_depth);

}  // namespace inflight
