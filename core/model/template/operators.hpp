#pragma once
/// Jinja's operators with Python's semantics: int arithmetic that refuses to overflow,
/// floor division and modulo that round toward negative infinity, + on strings and
/// lists, * repeating them, ~ joining text, comparisons, `in`, and slicing.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/base/error.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/value.hpp"

namespace inflight::jinja {

/// `a op b` for op in == != < > <= >= in "not in" + - * / // % ** ~ (not and / or).
result<value> binary_operation(renderer& r, std::string_view op, const value& a, const value& b);
result<value> negate(const value& v);
result<value> positive(const value& v);
/// v[start:stop:step] of a list or a string (by character); undefined for other values.
/// `step` is not 0.
value slice_value(const value& v, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                  std::int64_t step);
/// `needle in haystack`: substring, list item or dict key; false for undefined.
result<bool> contains(const value& haystack, const value& needle);

}  // namespace inflight::jinja
