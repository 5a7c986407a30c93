#include "core/model/template/value_json.hpp"

#include <algorithm>
#include <cmath>

#include "core/base/codepoints.hpp"
#include "core/model/template/dict_keys.hpp"

namespace inflight::jinja {
namespace {

template <class Json>
result<value> from_json(const Json& j, int depth) {
  if (depth > max_value_nesting) {
    return make_error(errc::invalid_argument,
                      "template context nests deeper than " + std::to_string(max_value_nesting) + " levels");
  }
  if (j.is_null()) return value(none_t{});
  if (j.is_boolean()) return value(j.template get<bool>());
  if (j.is_number_unsigned() && j.template get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    return value(j.template get<double>());
  }
  if (j.is_number_integer()) return value(j.template get<std::int64_t>());
  if (j.is_number_float()) return value(j.template get<double>());
  if (j.is_string()) return value(j.template get<std::string>());
  if (j.is_array()) {
    std::vector<value> items;
    items.reserve(j.size());
    for (const auto& item : j) {
      auto v = from_json(item, depth + 1);
      if (!v) return v;
      items.push_back(std::move(*v));
    }
    return value(std::move(items));
  }
  if (!j.is_object()) return make_error(errc::invalid_argument, "template context: binary JSON values are not supported");
  auto d = std::make_shared<dict>();
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto v = from_json(it.value(), depth + 1);
    if (!v) return v;
    d->set(it.key(), std::move(*v));
  }
  return value(std::move(d));
}

void append_unicode_escape(std::string& out, std::uint32_t unit) {
  constexpr char hex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += hex[(unit >> shift) & 15];
}

/// json.dumps(ensure_ascii=True): every character outside ' '..'~' as \uXXXX, above U+FFFF
/// as a surrogate pair, as Python writes them.
void append_ascii_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char32_t cp : to_codepoints(s)) {
    if (cp == '"') out += "\\\"";
    else if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\b') out += "\\b";
    else if (cp == '\f') out += "\\f";
    else if (cp >= 0x20 && cp < 0x7f) out += static_cast<char>(cp);
    else if (cp < 0x10000) append_unicode_escape(out, cp);
    else {
      append_unicode_escape(out, 0xd800 + ((cp - 0x10000) >> 10));
      append_unicode_escape(out, 0xdc00 + ((cp - 0x10000) & 0x3ff));
    }
  }
  out += '"';
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  if (ensure_ascii) return append_ascii_json_string(out, s);
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string json_number(const value& v) {
  if (v.is_int()) return std::to_string(v.as_int());
  const double d = v.as_double();
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return python_float_repr(d);
}

class json_writer {
 public:
  explicit json_writer(const json_format& f) : f_(f) {}

  result<void> write(const value& v, int level) {
    if (v.is_undefined()) return make_error(errc::invalid_argument, "tojson: an undefined value is not JSON serializable");
    if (v.is_none()) out_ += "null";
    else if (v.is_bool()) out_ += v.as_bool() ? "true" : "false";
    else if (v.is_number()) out_ += json_number(v);
    else if (v.is_string()) append_json_string(out_, v.as_string(), f_.ensure_ascii);
    else if (v.is_list()) return write_list(v.as_list(), level);
    else if (v.is_dict()) return write_dict(*v.as_dict(), level);
    else return make_error(errc::invalid_argument, "tojson: a " + std::string(v.type_name()) + " is not JSON serializable");
    return {};
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int level) {
    if (!f_.indent) return;
    out_ += '\n';
    out_.append(static_cast<std::size_t>(*f_.indent * level), ' ');
  }

  result<void> write_list(const std::vector<value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return {};
    }
    out_ += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += f_.item_separator;
      newline(level + 1);
      if (auto ok = write(items[i], level + 1); !ok) return ok;
    }
    newline(level);
    out_ += ']';
    return {};
  }

  result<void> write_dict(const dict& d, int level) {
    if (d.items.empty()) {
      out_ += "{}";
      return {};
    }
    std::vector<const std::pair<std::string, value>*> items;
    for (const auto& item : d.items) items.push_back(&item);
    if (f_.sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '{';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += f_.item_separator;
      newline(level + 1);
      append_json_string(out_, json_dict_key(items[i]->first), f_.ensure_ascii);
      out_ += f_.key_separator;
      if (auto ok = write(items[i]->second, level + 1); !ok) return ok;
    }
    newline(level);
    out_ += '}';
    return {};
  }

  const json_format& f_;
  std::string out_;
};

}  // namespace

result<value> try_from_json(const nlohmann::ordered_json& j) { return from_json(j, 0); }
result<value> try_from_json(const nlohmann::json& j) { return from_json(j, 0); }

result<std::string> try_to_json_text(const value& v, const json_format& format) {
  json_writer w(format);
  if (auto ok = w.write(v, 0); !ok) return std::unexpected(ok.error());
  return w.take();
}

}  // namespace inflight::jinja
