#include "core/model/template/value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/model/template/dict_keys.hpp"

namespace inflight::jinja {

value::value(std::vector<value> items) {
  auto l = std::make_shared<list>();
  for (const value& item : items) {
    l->depth = std::max(l->depth, item.nesting() + 1);
    l->has_namespace = l->has_namespace || item.has_namespace();
  }
  l->items = std::move(items);
  v_ = list_ptr(std::move(l));
}

const std::vector<value>& value::as_list() const { return std::get<list_ptr>(v_)->items; }

int value::nesting() const {
  if (is_list()) return std::get<list_ptr>(v_)->depth;
  if (is_dict()) return as_dict()->depth;
  return 0;
}

bool value::has_namespace() const {
  if (is_list()) return std::get<list_ptr>(v_)->has_namespace;
  if (is_dict()) return as_dict()->is_namespace || as_dict()->has_namespace;
  return false;
}

double value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return static_cast<double>(as_int());
}

bool value::truthy() const {
  switch (v_.index()) {
    case 0:
    case 1: return false;
    case 2: return as_bool();
    case 3: return as_int() != 0;
    case 4: return std::get<double>(v_) != 0.0;
    case 5: return !as_string().empty();
    case 6: return !as_list().empty();
    case 7: return !as_dict()->items.empty();
    default: return true;
  }
}

std::string_view value::type_name() const {
  constexpr std::string_view names[] = {"undefined", "none", "boolean", "integer", "float",
                                        "string",    "list", "dict",    "function"};
  return names[v_.index()];
}

const value* dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void dict::set(std::string_view key, value v) {
  depth = std::max(depth, v.nesting() + 1);
  has_namespace = has_namespace || v.has_namespace();
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(std::string(key), std::move(v));
}

value make_dict(std::vector<std::pair<std::string, value>> items, bool is_namespace) {
  auto d = std::make_shared<dict>();
  d->is_namespace = is_namespace;
  for (auto& [k, v] : items) d->set(k, std::move(v));
  return value(std::move(d));
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));  // "1.2345e-05"
  const std::size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int exponent = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exponent);
  const int decpt = exponent + 1;  // digits before the decimal point
  const int num_digits = static_cast<int>(digits.size());
  std::string out = std::signbit(d) ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return out.append("0.").append(static_cast<std::size_t>(-decpt), '0').append(digits);
    if (decpt >= num_digits) return out + digits + std::string(decpt - num_digits, '0') + ".0";
    return out + digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  out += digits.substr(0, 1);
  if (num_digits > 1) out.append(1, '.').append(digits, 1);
  const std::string exp_digits = std::to_string(std::abs(exponent));
  return out + "e" + (exponent < 0 ? "-" : "+") + (exp_digits.size() < 2 ? "0" : "") + exp_digits;
}

namespace {

std::string quote_string(const std::string& s) {
  const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = use_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + quote;
}

}  // namespace

std::string to_text(const value& v) {
  if (v.is_undefined()) return "";
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_float()) return python_float_repr(v.as_double());
  if (v.is_string()) return v.as_string();
  if (v.is_function()) return "<function " + v.as_function().name + ">";
  std::string out;
  if (v.is_list()) {
    for (const value& item : v.as_list()) out += (out.empty() ? "" : ", ") + to_repr(item);
    return "[" + out + "]";
  }
  for (const auto& [k, item] : v.as_dict()->items) {
    out += (out.empty() ? "" : ", ") + to_repr(decode_dict_key(k)) + ": " + to_repr(item);
  }
  return "{" + out + "}";
}

std::string to_repr(const value& v) {
  if (v.is_string()) return quote_string(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return to_text(v);
}

namespace {

bool is_numeric(const value& v) { return v.is_number() || v.is_bool(); }

bool dicts_equal(const dict& a, const dict& b) {
  if (a.items.size() != b.items.size()) return false;
  for (const auto& [k, v] : a.items) {
    const value* other = b.find(k);
    if (!other || !equals(v, *other)) return false;
  }
  return true;
}

}  // namespace

bool equals(const value& a, const value& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return (a.is_bool() ? a.as_bool() : a.as_int()) == (b.is_bool() ? b.as_bool() : b.as_int());
  }
  if (a.raw().index() != b.raw().index()) return false;
  if (a.is_string()) return a.as_string() == b.as_string();
  if (a.is_undefined() || a.is_none()) return true;
  if (a.is_function()) return &a.as_function() == &b.as_function();
  if (a.is_dict()) return dicts_equal(*a.as_dict(), *b.as_dict());
  const auto& x = a.as_list();
  const auto& y = b.as_list();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!equals(x[i], y[i])) return false;
  }
  return true;
}

std::optional<int> compare(const value& a, const value& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.is_int() && b.is_int()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      auto c = compare(x[i], y[i]);
      if (!c || *c != 0) return c;
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return std::nullopt;
}

// --- dict keys (dict_keys.hpp) ---

namespace {

constexpr char dict_key_marker = '\x1f';  // a control character: no key of a JSON context or template starts with it

}  // namespace

std::optional<std::string> encode_dict_key(const value& key) {
  if (key.is_string()) return key.as_string();
  if (key.is_int()) return std::string{dict_key_marker, 'i'} + std::to_string(key.as_int());
  if (key.is_bool()) return std::string{dict_key_marker, 'b'} + (key.as_bool() ? "1" : "0");
  if (key.is_none()) return std::string{dict_key_marker, 'n'};
  if (key.is_float()) return std::string{dict_key_marker, 'f'} + python_float_repr(key.as_double());
  return std::nullopt;
}

value decode_dict_key(const std::string& stored) {
  if (stored.size() < 2 || stored[0] != dict_key_marker) return value(stored);
  const std::string body = stored.substr(2);
  switch (stored[1]) {
    case 'i': {
      std::int64_t i = 0;
      std::from_chars(body.data(), body.data() + body.size(), i);
      return value(i);
    }
    case 'b': return value(body == "1");
    case 'n': return value(none_t{});
    case 'f': {
      double d = 0;
      std::from_chars(body.data(), body.data() + body.size(), d);
      return value(d);
    }
    default: return value(stored);
  }
}

std::string json_dict_key(const std::string& stored) {
  const value key = decode_dict_key(stored);
  if (key.is_string()) return key.as_string();
  if (key.is_bool()) return key.as_bool() ? "true" : "false";
  if (key.is_none()) return "null";
  return to_text(key);
}

}  // namespace inflight::jinja
