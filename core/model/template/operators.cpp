#include "core/model/template/operators.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/codepoints.hpp"
#include "core/model/template/dict_keys.hpp"
#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {

bool is_numeric(const value& v) { return v.is_number() || v.is_bool(); }
bool is_integral(const value& v) { return v.is_int() || v.is_bool(); }
std::int64_t int_of(const value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }

std::unexpected<error> type_error(std::string_view op, const value& a, const value& b) {
  return std::unexpected(error{errc::invalid_argument, "unsupported operand types for " + std::string(op) + ": " +
                                                           std::string(a.type_name()) + " and " +
                                                           std::string(b.type_name())});
}

std::unexpected<error> overflow() {
  return std::unexpected(error{errc::invalid_argument, "integer overflow"});
}

result<value> int_power(std::int64_t base, std::int64_t exponent) {
  if (exponent < 0) return value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  std::int64_t out = 1;
  while (exponent > 0) {
    if ((exponent & 1) && __builtin_mul_overflow(out, base, &out)) return overflow();
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
  }
  return value(out);
}

result<value> int_arithmetic(std::string_view op, std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (op == "+") return __builtin_add_overflow(a, b, &out) ? overflow() : result<value>(value(out));
  if (op == "-") return __builtin_sub_overflow(a, b, &out) ? overflow() : result<value>(value(out));
  if (op == "*") return __builtin_mul_overflow(a, b, &out) ? overflow() : result<value>(value(out));
  if (op == "**") return int_power(a, b);
  if (b == 0) return std::unexpected(error{errc::invalid_argument, "division by zero"});
  if (op == "/") return value(static_cast<double>(a) / static_cast<double>(b));
  if (a == INT64_MIN && b == -1) return overflow();
  std::int64_t q = a / b, m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) --q, m += b;  // Python rounds toward negative infinity
  return op == "//" ? value(q) : value(m);
}

result<value> float_arithmetic(std::string_view op, double a, double b) {
  if (op == "+") return value(a + b);
  if (op == "-") return value(a - b);
  if (op == "*") return value(a * b);
  if (op == "**") return value(std::pow(a, b));
  if (b == 0) return std::unexpected(error{errc::invalid_argument, "division by zero"});
  if (op == "/") return value(a / b);
  if (op == "//") return value(std::floor(a / b));
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return value(m);
}

result<value> repeat(renderer& r, const value& seq, std::int64_t n) {
  if (n <= 0) return seq.is_string() ? value("") : value(std::vector<value>{});
  if (seq.is_string()) {
    const std::size_t size = seq.as_string().size();
    if (size > 0 && static_cast<std::uint64_t>(n) > r.limits().max_output_bytes / size) {
      return std::unexpected(r.check_size(r.limits().max_output_bytes + 1).error());
    }
    std::string out;
    for (std::int64_t i = 0; i < n; ++i) out += seq.as_string();
    return value(std::move(out));
  }
  const auto& items = seq.as_list();
  if (static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(r.limits().max_iterations)) {
    return std::unexpected(r.charge(r.limits().max_iterations + 1).error());
  }
  if (auto ok = r.charge(n * static_cast<std::int64_t>(items.size())); !ok) return std::unexpected(ok.error());
  std::vector<value> out;
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return value(std::move(out));
}

result<value> concatenate(renderer& r, const value& a, const value& b) {
  if (a.is_string() && b.is_string()) {
    if (auto ok = r.check_size(a.as_string().size() + b.as_string().size()); !ok) return std::unexpected(ok.error());
    return value(a.as_string() + b.as_string());
  }
  if (!a.is_list() || !b.is_list()) return type_error("+", a, b);
  if (auto ok = r.charge(static_cast<std::int64_t>(b.as_list().size())); !ok) return std::unexpected(ok.error());
  std::vector<value> out = a.as_list();
  out.insert(out.end(), b.as_list().begin(), b.as_list().end());
  return value(std::move(out));
}

result<value> arithmetic(renderer& r, std::string_view op, const value& a, const value& b) {
  if (is_integral(a) && is_integral(b)) return int_arithmetic(op, int_of(a), int_of(b));
  if (is_numeric(a) && is_numeric(b)) return float_arithmetic(op, a.as_double(), b.as_double());
  if (op == "+") return concatenate(r, a, b);
  if (op == "*" && (a.is_string() || a.is_list()) && is_integral(b)) return repeat(r, a, int_of(b));
  if (op == "*" && (b.is_string() || b.is_list()) && is_integral(a)) return repeat(r, b, int_of(a));
  return type_error(op, a, b);
}

result<value> comparison(std::string_view op, const value& a, const value& b) {
  if (op == "==") return value(equals(a, b));
  if (op == "!=") return value(!equals(a, b));
  const auto c = compare(a, b);
  if (!c) return type_error(op, a, b);
  if (op == "<") return value(*c < 0);
  if (op == ">") return value(*c > 0);
  if (op == "<=") return value(*c <= 0);
  return value(*c >= 0);
}

}  // namespace

result<bool> contains(const value& haystack, const value& needle) {
  if (haystack.is_undefined()) return false;
  if (haystack.is_string()) {
    if (!needle.is_string()) return type_error("in", needle, haystack);
    return haystack.as_string().find(needle.as_string()) != std::string::npos;
  }
  if (haystack.is_list()) {
    for (const value& item : haystack.as_list()) {
      if (equals(item, needle)) return true;
    }
    return false;
  }
  if (haystack.is_dict()) {
    const auto stored = encode_dict_key(needle);
    return stored && haystack.as_dict()->find(*stored) != nullptr;
  }
  return type_error("in", needle, haystack);
}

result<value> binary_operation(renderer& r, std::string_view op, const value& a, const value& b) {
  if (op == "in" || op == "not in") {
    auto c = contains(b, a);
    if (!c) return std::unexpected(c.error());
    return value(*c == (op == "in"));
  }
  if (op == "~") {
    std::string text = to_text(a) + to_text(b);
    if (auto ok = r.check_size(text.size()); !ok) return std::unexpected(ok.error());
    return value(std::move(text));
  }
  if (op.size() <= 2 && (op[0] == '=' || op[0] == '!' || op[0] == '<' || op[0] == '>')) return comparison(op, a, b);
  return arithmetic(r, op, a, b);
}

result<value> negate(const value& v) {
  if (is_integral(v)) {
    if (int_of(v) == INT64_MIN) return overflow();
    return value(-int_of(v));
  }
  if (v.is_float()) return value(-v.as_double());
  return std::unexpected(error{errc::invalid_argument, "bad operand type for unary -: " + std::string(v.type_name())});
}

result<value> positive(const value& v) {
  if (is_integral(v)) return value(int_of(v));
  if (v.is_float()) return v;
  return std::unexpected(error{errc::invalid_argument, "bad operand type for unary +: " + std::string(v.type_name())});
}

namespace {

/// The indices a Python slice visits over a sequence of `n` items.
std::vector<std::size_t> slice_indices(std::int64_t n, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop, std::int64_t step) {
  auto clamp = [&](std::optional<std::int64_t> i, std::int64_t if_absent) {
    if (!i) return if_absent;
    std::int64_t x = *i < 0 ? *i + n : *i;
    if (step > 0) return std::clamp<std::int64_t>(x, 0, n);
    return std::clamp<std::int64_t>(x, -1, n - 1);
  };
  const std::int64_t from = clamp(start, step > 0 ? 0 : n - 1);
  const std::int64_t to = clamp(stop, step > 0 ? n : -1);
  std::vector<std::size_t> out;
  for (__int128 i = from; step > 0 ? i < to : i > to; i += step) out.push_back(static_cast<std::size_t>(i));
  return out;
}

}  // namespace

value slice_value(const value& v, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                  std::int64_t step) {
  if (v.is_list()) {
    const auto& items = v.as_list();
    std::vector<value> out;
    for (std::size_t i : slice_indices(static_cast<std::int64_t>(items.size()), start, stop, step)) {
      out.push_back(items[i]);
    }
    return value(std::move(out));
  }
  if (!v.is_string()) return value();
  const std::vector<std::string> chars = split_characters(v.as_string());
  std::string out;
  for (std::size_t i : slice_indices(static_cast<std::int64_t>(chars.size()), start, stop, step)) out += chars[i];
  return value(std::move(out));
}

}  // namespace inflight::jinja
