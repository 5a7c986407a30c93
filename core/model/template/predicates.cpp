// Jinja's tests: `x is defined`, `x is divisibleby 3`, `x is not none`, ...
#include <array>

#include "core/model/template/builtins.hpp"
#include "core/model/template/operators.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {

using test_fn = result<bool> (*)(const value& v, const value* arg);

std::unexpected<error> needs_argument(std::string_view test) {
  return std::unexpected(error{errc::invalid_argument, "test '" + std::string(test) + "' needs an argument"});
}

result<bool> compare_test(const value& v, const value* arg, std::string_view op) {
  if (!arg) return needs_argument(op);
  const auto c = compare(v, *arg);
  if (!c) return std::unexpected(error{errc::invalid_argument, "cannot compare " + std::string(v.type_name()) + " and " +
                                                                   std::string(arg->type_name())});
  if (op == "lt") return *c < 0;
  if (op == "le") return *c <= 0;
  if (op == "gt") return *c > 0;
  return *c >= 0;
}

bool is_integer(const value& v) { return v.is_int(); }

result<bool> divisible(const value& v, const value* arg, std::int64_t remainder_of_two) {
  if (!v.is_int()) return false;
  std::int64_t divisor = 2;
  if (remainder_of_two < 0) {
    if (!arg) return needs_argument("divisibleby");
    if (!arg->is_int() || arg->as_int() == 0) {
      return std::unexpected(error{errc::invalid_argument, "divisibleby needs a non-zero integer"});
    }
    divisor = arg->as_int();
  }
  if (divisor == -1) return remainder_of_two <= 0;
  const std::int64_t m = ((v.as_int() % divisor) + divisor) % divisor;
  return remainder_of_two < 0 ? m == 0 : m == remainder_of_two;
}

struct named_test {
  std::string_view name;
  test_fn fn;
};

const std::array<named_test, 31> tests{{
    {"defined", [](const value& v, const value*) -> result<bool> { return !v.is_undefined(); }},
    {"undefined", [](const value& v, const value*) -> result<bool> { return v.is_undefined(); }},
    {"none", [](const value& v, const value*) -> result<bool> { return v.is_none(); }},
    {"boolean", [](const value& v, const value*) -> result<bool> { return v.is_bool(); }},
    {"true", [](const value& v, const value*) -> result<bool> { return v.is_bool() && v.as_bool(); }},
    {"false", [](const value& v, const value*) -> result<bool> { return v.is_bool() && !v.as_bool(); }},
    {"string", [](const value& v, const value*) -> result<bool> { return v.is_string(); }},
    {"number", [](const value& v, const value*) -> result<bool> { return v.is_number() || v.is_bool(); }},
    {"integer", [](const value& v, const value*) -> result<bool> { return is_integer(v); }},
    {"float", [](const value& v, const value*) -> result<bool> { return v.is_float(); }},
    {"mapping", [](const value& v, const value*) -> result<bool> { return v.is_dict(); }},
    {"iterable", [](const value& v, const value*) -> result<bool> {
       return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined();
     }},
    {"sequence", [](const value& v, const value*) -> result<bool> {
       return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined();
     }},
    {"callable", [](const value& v, const value*) -> result<bool> { return v.is_function(); }},
    {"odd", [](const value& v, const value* a) { return divisible(v, a, 1); }},
    {"even", [](const value& v, const value* a) { return divisible(v, a, 0); }},
    {"divisibleby", [](const value& v, const value* a) { return divisible(v, a, -1); }},
    {"lower", [](const value& v, const value*) -> result<bool> {
       return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
     }},
    {"upper", [](const value& v, const value*) -> result<bool> {
       return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
     }},
    {"eq", [](const value& v, const value* a) -> result<bool> { return a ? result<bool>(equals(v, *a)) : needs_argument("eq"); }},
    {"equalto", [](const value& v, const value* a) -> result<bool> { return a ? result<bool>(equals(v, *a)) : needs_argument("equalto"); }},
    {"==", [](const value& v, const value* a) -> result<bool> { return a ? result<bool>(equals(v, *a)) : needs_argument("=="); }},
    {"sameas", [](const value& v, const value* a) -> result<bool> {
       if (!a) return needs_argument("sameas");
       return v.raw().index() == a->raw().index() && equals(v, *a);
     }},
    {"ne", [](const value& v, const value* a) -> result<bool> { return a ? result<bool>(!equals(v, *a)) : needs_argument("ne"); }},
    {"!=", [](const value& v, const value* a) -> result<bool> { return a ? result<bool>(!equals(v, *a)) : needs_argument("!="); }},
    {"lt", [](const value& v, const value* a) { return compare_test(v, a, "lt"); }},
    {"le", [](const value& v, const value* a) { return compare_test(v, a, "le"); }},
    {"gt", [](const value& v, const value* a) { return compare_test(v, a, "gt"); }},
    {"ge", [](const value& v, const value* a) { return compare_test(v, a, "ge"); }},
    {"in", [](const value& v, const value* a) -> result<bool> { return a ? contains(*a, v) : needs_argument("in"); }},
    {"filter", [](const value& v, const value*) -> result<bool> { return v.is_string() && is_known_filter(v.as_string()); }},
}};

const named_test* find_test(std::string_view name) {
  for (const auto& t : tests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace

bool is_known_test(std::string_view name) { return find_test(name) != nullptr; }

result<bool> apply_test(std::string_view name, const value& subject, const call_args& args) {
  const named_test* t = find_test(name);
  if (!t) return std::unexpected(error{errc::invalid_argument, "unknown test '" + std::string(name) + "'"});
  return t->fn(subject, args.get(0, "value"));
}

}  // namespace inflight::jinja
