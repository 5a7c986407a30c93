#pragma once
/// What templates call by name: filters (`x | tojson`), tests (`x is defined`),
/// methods of strings and dicts (`s.strip()`, `d.items()`) and global functions
/// (`range`, `namespace`, `raise_exception`, `strftime_now`, `dict`).

#include <string_view>

#include "core/base/error.hpp"
#include "core/model/template/value.hpp"

namespace inflight::jinja {

class renderer;    // renderer.hpp: the render calls back into it (macros, loops, caller())
struct call_args;  // renderer.hpp

/// Whether `name` is a filter this engine implements (the parser refuses others, so a
/// template using one fails to parse rather than to render).
bool is_known_filter(std::string_view name);
result<value> apply_filter(renderer& r, std::string_view name, const value& subject, const call_args& args);

/// Whether `name` is a test this engine implements (checked by the parser too).
bool is_known_test(std::string_view name);
result<bool> apply_test(std::string_view name, const value& subject, const call_args& args);

/// `object.name(args)` for strings and dicts; errc::not_found when there is no such method.
result<value> call_method(renderer& r, const value& object, std::string_view name, const call_args& args);

/// The global function called `name`, nullptr when there is none.
const value* find_global(std::string_view name);
result<value> call_builtin(renderer& r, builtin_function f, const call_args& args);

/// `object.name` / `object[name]`: a dict's item, else undefined.
value get_attribute(const value& object, std::string_view name);
/// `object[index]`: items of lists, dicts and strings (by code point); undefined when absent.
value get_item(const value& object, const value& index);

}  // namespace inflight::jinja
