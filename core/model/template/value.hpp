#pragma once
/// The values a Jinja template computes with: undefined, none, bool, int, float, string,
/// list, dict (insertion-ordered, string keys) and callables (macros and built-in
/// functions). Lists and dicts are shared and immutable once built, so copying a value
/// is cheap; a `namespace(...)` is the one dict that `{% set ns.x = ... %}` changes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace inflight::jinja {

class value;
struct list;
struct dict;
struct function;

struct undefined_t {
  bool operator==(const undefined_t&) const = default;
};
struct none_t {
  bool operator==(const none_t&) const = default;
};

using list_ptr = std::shared_ptr<const list>;
using dict_ptr = std::shared_ptr<dict>;
using function_ptr = std::shared_ptr<const function>;

class value {
 public:
  using storage = std::variant<undefined_t, none_t, bool, std::int64_t, double, std::string, list_ptr, dict_ptr,
                               function_ptr>;

  value() = default;
  value(none_t) : v_(none_t{}) {}
  value(bool b) : v_(b) {}
  value(int i) : v_(static_cast<std::int64_t>(i)) {}
  value(std::int64_t i) : v_(i) {}
  value(double d) : v_(d) {}
  value(std::string s) : v_(std::move(s)) {}
  value(std::string_view s) : v_(std::string(s)) {}
  value(const char* s) : v_(std::string(s)) {}
  value(std::vector<value> items);
  value(list_ptr l) : v_(std::move(l)) {}
  value(dict_ptr d) : v_(std::move(d)) {}
  value(function_ptr f) : v_(std::move(f)) {}

  bool is_undefined() const { return std::holds_alternative<undefined_t>(v_); }
  bool is_none() const { return std::holds_alternative<none_t>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_list() const { return std::holds_alternative<list_ptr>(v_); }
  bool is_dict() const { return std::holds_alternative<dict_ptr>(v_); }
  bool is_function() const { return std::holds_alternative<function_ptr>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
  /// An int or float as a double (bools count as 0 / 1, as in Python).
  double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const std::vector<value>& as_list() const;
  const dict_ptr& as_dict() const { return std::get<dict_ptr>(v_); }
  const function& as_function() const { return *std::get<function_ptr>(v_); }

  /// Python truthiness: undefined, none, false, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  /// How deeply lists and dicts nest in this value: 0 for a scalar, 1 for a flat list.
  int nesting() const;
  /// Whether this is a namespace or a list / dict holding one (namespaces may not nest:
  /// `{% set ns.x = ns %}` would make a cycle).
  bool has_namespace() const;
  /// The type name used in error messages ("string", "list", ...).
  std::string_view type_name() const;
  const storage& raw() const { return v_; }

 private:
  storage v_;
};

struct stmt;

/// The global functions a template can call.
enum class builtin_function { none, raise_exception, range, namespace_, dict, strftime_now };

/// A callable: a built-in function or a template's macro (whose statement the parsed
/// template owns, and which outlives every render).
struct function {
  std::string name;
  builtin_function builtin = builtin_function::none;
  const stmt* macro = nullptr;
};

/// A list's items, with the nesting depth and namespace flag computed once.
struct list {
  std::vector<value> items;
  int depth = 1;
  bool has_namespace = false;
};

/// An insertion-ordered dict with string keys (what a JSON object or a namespace holds).
struct dict {
  std::vector<std::pair<std::string, value>> items;
  bool is_namespace = false;
  int depth = 1;               ///< only grows: an upper bound after a namespace attribute is replaced
  bool has_namespace = false;  ///< a value inside is (or holds) a namespace

  /// The value of `key`, nullptr when absent.
  const value* find(std::string_view key) const;
  /// Sets `key`, keeping its place when it exists, appending it otherwise.
  void set(std::string_view key, value v);
};

/// A dict value built from key / value pairs.
value make_dict(std::vector<std::pair<std::string, value>> items, bool is_namespace = false);

/// Text of a value as Jinja's `{{ }}` writes it (Python's str()): None, True, 1.5,
/// ['a', 1], {'k': 'v'}; undefined is "".
std::string to_text(const value& v);
/// Python's repr(): strings quoted, the rest as to_text.
std::string to_repr(const value& v);
/// Python's repr() of a float: shortest round trip, "1.0", "1e+16", "nan", "inf".
std::string python_float_repr(double d);

/// Python ==: numbers across int / float / bool, lists element-wise, dicts by keys.
bool equals(const value& a, const value& b);
/// Python <: -1, 0, 1 for numbers with numbers and strings with strings; nullopt otherwise.
std::optional<int> compare(const value& a, const value& b);

}  // namespace inflight::jinja
