// Methods templates call on strings (Python's str) and dicts.
#include "core/model/template/dict_keys.hpp"
#include "core/model/template/builtins.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/str_format.hpp"
#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {

std::unexpected<error> bad_args(std::string_view method, std::string_view what) {
  return std::unexpected(error{errc::invalid_argument, std::string(method) + "() " + std::string(what)});
}

std::unexpected<error> no_method() { return std::unexpected(error{errc::not_found, "no such method"}); }

/// An optional string argument: absent or none is nullopt.
result<std::optional<std::string>> optional_string(const call_args& args, std::size_t i, std::string_view name,
                                                   std::string_view method) {
  const value* v = args.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) return bad_args(method, "expects a string argument");
  return std::optional(v->as_string());
}

result<std::int64_t> optional_int(const call_args& args, std::size_t i, std::string_view name, std::int64_t if_absent) {
  const value* v = args.get(i, name);
  if (!v || v->is_none()) return if_absent;
  if (!v->is_int()) return bad_args(name, "expects an integer");
  return v->as_int();
}

result<value> affix_test(const std::string& s, const call_args& args, bool is_prefix) {
  const value* arg = args.get(0, is_prefix ? "prefix" : "suffix");
  if (!arg) return bad_args(is_prefix ? "startswith" : "endswith", "takes a string or a list of strings");
  const std::vector<value> choices = arg->is_list() ? arg->as_list() : std::vector<value>{*arg};
  for (const value& c : choices) {
    if (!c.is_string()) return bad_args(is_prefix ? "startswith" : "endswith", "takes a string or a list of strings");
    if (is_prefix ? s.starts_with(c.as_string()) : s.ends_with(c.as_string())) return value(true);
  }
  return value(false);
}

result<value> split_method(const std::string& s, const call_args& args) {
  auto sep = optional_string(args, 0, "sep", "split");
  if (!sep) return std::unexpected(sep.error());
  if (*sep && (*sep)->empty()) return bad_args("split", "got an empty separator");
  auto max_split = optional_int(args, 1, "maxsplit", -1);
  if (!max_split) return std::unexpected(max_split.error());
  std::vector<value> out;
  for (std::string& part : python_split(s, *sep, *max_split)) out.emplace_back(std::move(part));
  return value(std::move(out));
}

result<value> replace_method(renderer& r, const std::string& s, const call_args& args) {
  const value* old = args.get(0, "old");
  const value* with = args.get(1, "new");
  if (!old || !with || !old->is_string() || !with->is_string()) return bad_args("replace", "takes two strings");
  auto count = optional_int(args, 2, "count", -1);
  if (!count) return std::unexpected(count.error());
  auto out = python_replace(s, old->as_string(), with->as_string(), *count, r.limits().max_output_bytes);
  if (!out) return std::unexpected(r.check_size(r.limits().max_output_bytes + 1).error());
  return value(std::move(*out));
}

result<value> join_method(renderer& r, const std::string& sep, const call_args& args) {
  const value* items = args.get(0, "iterable");
  if (!items || !items->is_list()) return bad_args("join", "takes a list of strings");
  std::string out;
  for (const value& item : items->as_list()) {
    if (!item.is_string()) return bad_args("join", "takes a list of strings");
    if (&item != &items->as_list().front()) out += sep;
    out += item.as_string();
    if (auto ok = r.check_size(out.size()); !ok) return std::unexpected(ok.error());
  }
  return value(std::move(out));
}

result<value> string_method(renderer& r, const std::string& s, std::string_view name, const call_args& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto chars = optional_string(args, 0, "chars", name);
    if (!chars) return std::unexpected(chars.error());
    return value(python_strip(s, *chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") return affix_test(s, args, name == "startswith");
  if (name == "split") return split_method(s, args);
  if (name == "replace") return replace_method(r, s, args);
  if (name == "join") return join_method(r, s, args);
  if (name == "format") {
    auto text = python_format(s, args);
    if (!text) return std::unexpected(text.error());
    if (auto ok = r.check_size(text->size()); !ok) return std::unexpected(ok.error());
    return value(std::move(*text));
  }
  if (name == "upper") return value(ascii_upper(s));
  if (name == "lower") return value(ascii_lower(s));
  if (name == "title") return value(python_title(s));
  if (name == "capitalize") return value(python_capitalize(s));
  if (name == "find" || name == "count") {
    const value* sub = args.get(0, "sub");
    if (!sub || !sub->is_string()) return bad_args(name, "takes a string");
    if (name == "find") return value(static_cast<std::int64_t>(python_find(s, sub->as_string())));
    return value(static_cast<std::int64_t>(python_count(s, sub->as_string())));
  }
  return no_method();
}

result<value> dict_method(const dict& d, std::string_view name, const call_args& args) {
  if (name == "get") {
    const value* key = args.get(0, "key");
    if (!key) return bad_args("get", "takes a key");
    const auto stored = encode_dict_key(*key);
    const value* found = stored ? d.find(*stored) : nullptr;
    if (found) return *found;
    const value* fallback = args.get(1, "default");
    return fallback ? *fallback : value(none_t{});
  }
  if (name != "items" && name != "keys" && name != "values") return no_method();
  std::vector<value> out;
  for (const auto& [k, v] : d.items) {
    if (name == "items") out.emplace_back(std::vector<value>{decode_dict_key(k), v});
    else out.push_back(name == "keys" ? decode_dict_key(k) : v);
  }
  return value(std::move(out));
}

}  // namespace

result<value> call_method(renderer& r, const value& object, std::string_view name, const call_args& args) {
  if (object.is_string()) return string_method(r, object.as_string(), name, args);
  if (object.is_dict() && !object.as_dict()->is_namespace) return dict_method(*object.as_dict(), name, args);
  return no_method();
}

}  // namespace inflight::jinja
