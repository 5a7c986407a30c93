// Global functions (range, namespace, dict, raise_exception, strftime_now) and item access.
#include <ctime>

#include "core/model/template/dict_keys.hpp"
#include "core/model/template/builtins.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/text.hpp"
#include "core/model/template/value_json.hpp"

namespace inflight::jinja {
namespace {

std::unexpected<error> bad_call(const std::string& what) {
  return std::unexpected(error{errc::invalid_argument, what});
}

value builtin(std::string_view name, builtin_function f) {
  auto fn = std::make_shared<function>();
  fn->name = std::string(name);
  fn->builtin = f;
  return value(function_ptr(std::move(fn)));
}

result<value> call_range(renderer& r, const call_args& args) {
  std::int64_t bounds[3] = {0, 0, 1};
  const std::size_t n = args.positional.size();
  if (n < 1 || n > 3) return bad_call("range expects 1 to 3 integer arguments");
  for (std::size_t i = 0; i < n; ++i) {
    if (!args.positional[i].is_int()) return bad_call("range expects integers");
  }
  if (n == 1) bounds[1] = args.positional[0].as_int();
  for (std::size_t i = 0; n > 1 && i < n; ++i) bounds[i] = args.positional[i].as_int();
  const auto [start, stop, step] = bounds;
  if (step == 0) return bad_call("range step must not be zero");
  const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 count = span <= 0 ? 0 : (span + (step > 0 ? step : -static_cast<__int128>(step)) - 1) /
                                             (step > 0 ? step : -static_cast<__int128>(step));
  if (count > r.limits().max_iterations) return std::unexpected(r.charge(r.limits().max_iterations + 1).error());
  if (auto ok = r.charge(static_cast<std::int64_t>(count)); !ok) return std::unexpected(ok.error());
  std::vector<value> items;
  for (__int128 i = 0; i < count; ++i) items.emplace_back(static_cast<std::int64_t>(start + i * step));
  return value(std::move(items));
}

result<value> call_namespace(const call_args& args, bool is_namespace) {
  auto d = std::make_shared<dict>();
  d->is_namespace = is_namespace;
  for (const value& v : args.positional) {
    if (!v.is_dict()) return bad_call("namespace() and dict() take a dict or keyword arguments");
    for (const auto& [k, item] : v.as_dict()->items) d->set(k, item);
  }
  for (const auto& [k, v] : args.keyword) d->set(k, v);
  if (is_namespace && d->has_namespace) return bad_call("a namespace cannot hold a namespace");
  return value(std::move(d));
}

result<value> call_strftime_now(const renderer& r, const call_args& args) {
  const value* format = args.get(0, "format");
  if (!format || !format->is_string()) return bad_call("strftime_now expects a format string");
  std::tm local{};
  if (const auto fixed = r.limits().fixed_now) {
    const auto t = static_cast<std::time_t>(*fixed);
    gmtime_r(&t, &local);
  } else {
    const std::time_t now = std::time(nullptr);
    localtime_r(&now, &local);
  }
  char buf[512];
  const std::size_t n = format->as_string().size() > 128 ? 0 : std::strftime(buf, sizeof buf, format->as_string().c_str(), &local);
  if (n == 0 && !format->as_string().empty()) return bad_call("strftime_now: the format is too long or empty");
  return value(std::string(buf, n));
}

}  // namespace

const value* find_global(std::string_view name) {
  static const std::pair<std::string_view, value> globals[] = {
      {"range", builtin("range", builtin_function::range)},
      {"namespace", builtin("namespace", builtin_function::namespace_)},
      {"dict", builtin("dict", builtin_function::dict)},
      {"raise_exception", builtin("raise_exception", builtin_function::raise_exception)},
      {"strftime_now", builtin("strftime_now", builtin_function::strftime_now)},
  };
  for (const auto& [n, v] : globals) {
    if (n == name) return &v;
  }
  return nullptr;
}

result<value> call_builtin(renderer& r, builtin_function f, const call_args& args) {
  switch (f) {
    case builtin_function::range: return call_range(r, args);
    case builtin_function::namespace_: return call_namespace(args, true);
    case builtin_function::dict: return call_namespace(args, false);
    case builtin_function::strftime_now: return call_strftime_now(r, args);
    case builtin_function::raise_exception: {
      const value* message = args.get(0, "message");
      return bad_call(message ? to_text(*message) : "raise_exception was called");
    }
    case builtin_function::none: break;
  }
  return bad_call("not a function");
}

value get_attribute(const value& object, std::string_view name) {
  if (!object.is_dict()) return value();
  const value* v = object.as_dict()->find(name);
  return v ? *v : value();
}

value get_item(const value& object, const value& index) {
  if (object.is_dict()) {
    const auto stored = encode_dict_key(index);
    return stored ? get_attribute(object, *stored) : value();
  }
  if (!index.is_int() || !(object.is_list() || object.is_string())) return value();
  if (object.is_list()) {
    const auto& items = object.as_list();
    const std::int64_t n = static_cast<std::int64_t>(items.size());
    const std::int64_t i = index.as_int() < 0 ? index.as_int() + n : index.as_int();
    return i >= 0 && i < n ? items[static_cast<std::size_t>(i)] : value();
  }
  const std::vector<std::string> chars = split_characters(object.as_string());
  const std::int64_t n = static_cast<std::int64_t>(chars.size());
  const std::int64_t i = index.as_int() < 0 ? index.as_int() + n : index.as_int();
  return i >= 0 && i < n ? value(chars[static_cast<std::size_t>(i)]) : value();
}

}  // namespace inflight::jinja
