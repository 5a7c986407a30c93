#pragma once
/// Python's str.format for templates: `'{}-{0}-{name!r}'.format(...)`.

#include <string>

#include "core/base/error.hpp"
#include "core/model/template/renderer.hpp"

namespace inflight::jinja {

/// `format_string.format(*positional, **keyword)`: fields `{}`, `{0}`, `{name}`, each with an
/// optional `!s` / `!r` and a format spec of fill, alignment (< > ^) and width; `{{` and `}}`
/// are braces. Errors (invalid_argument) for a missing argument, a bad field or another spec.
result<std::string> python_format(const std::string& format_string, const call_args& args);

}  // namespace inflight::jinja
