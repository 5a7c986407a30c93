// Jinja's filters on scalars and strings; the ones over sequences are in filters_seq.cpp.
#include "core/model/template/filters.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "core/model/template/dict_keys.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/text.hpp"
#include "core/model/template/value_json.hpp"

namespace inflight::jinja {

std::unexpected<error> filter_error(std::string_view filter, std::string_view what) {
  return std::unexpected(error{errc::invalid_argument, std::string(filter) + ": " + std::string(what)});
}

result<std::vector<value>> sequence_of(const value& v, std::string_view filter) {
  if (v.is_list()) return v.as_list();
  std::vector<value> out;
  if (v.is_undefined()) return out;
  if (v.is_dict()) {
    for (const auto& [k, unused] : v.as_dict()->items) out.push_back(decode_dict_key(k));
    return out;
  }
  if (v.is_string()) {
    for (std::string& c : split_characters(v.as_string())) out.emplace_back(std::move(c));
    return out;
  }
  return filter_error(filter, "cannot iterate over a " + std::string(v.type_name()));
}

result<value> sorted_by_key(std::vector<std::pair<value, value>> keyed, bool is_reverse, std::string_view filter,
                            std::string_view what) {
  bool is_comparable = true;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    const auto c = is_reverse ? compare(b.first, a.first) : compare(a.first, b.first);
    is_comparable = is_comparable && c.has_value();
    return c && *c < 0;
  });
  if (!is_comparable) return filter_error(filter, "the " + std::string(what) + " cannot be compared with each other");
  std::vector<value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return value(std::move(out));
}

namespace {

/// Jinja's soft_str: strings as they are, other values as `{{ }}` writes them.
std::string text_of(const value& v) { return v.is_string() ? v.as_string() : to_text(v); }

bool flag(const call_args& args, std::size_t i, std::string_view name) {
  const value* v = args.get(i, name);
  return v && v->truthy();
}

result<value> tojson(renderer& r, const value& v, const call_args& args) {
  json_format format;
  if (const value* indent = args.get(0, "indent"); indent && !indent->is_none()) {
    if (!indent->is_int() || indent->as_int() < 0 || indent->as_int() > 64) {
      return filter_error("tojson", "indent must be an integer from 0 to 64");
    }
    format.indent = static_cast<int>(indent->as_int());
    format.item_separator.assign(1, ',');
  }
  if (const value* seps = args.get(99, "separators"); seps && !seps->is_none()) {
    if (!seps->is_list() || seps->as_list().size() != 2 || !seps->as_list()[0].is_string() ||
        !seps->as_list()[1].is_string()) {
      return filter_error("tojson", "separators must be two strings");
    }
    format.item_separator = seps->as_list()[0].as_string();
    format.key_separator = seps->as_list()[1].as_string();
  }
  format.sort_keys = flag(args, 99, "sort_keys");
  format.ensure_ascii = flag(args, 99, "ensure_ascii");
  auto text = try_to_json_text(v, format);
  if (!text) return std::unexpected(text.error());
  if (auto ok = r.check_size(text->size()); !ok) return std::unexpected(ok.error());
  return value(std::move(*text));
}

result<value> length(renderer&, const value& v, const call_args&) {
  if (v.is_string()) return value(static_cast<std::int64_t>(count_characters(v.as_string())));
  if (v.is_list()) return value(static_cast<std::int64_t>(v.as_list().size()));
  if (v.is_dict()) return value(static_cast<std::int64_t>(v.as_dict()->items.size()));
  if (v.is_undefined()) return value(0);
  return filter_error("length", "a " + std::string(v.type_name()) + " has no length");
}

result<value> default_filter(renderer&, const value& v, const call_args& args) {
  const value* fallback = args.get(0, "default_value");
  const bool use_fallback = v.is_undefined() || (flag(args, 1, "boolean") && !v.truthy());
  if (!use_fallback) return v;
  return fallback ? *fallback : value("");
}

result<value> trim(renderer&, const value& v, const call_args& args) {
  const value* chars = args.get(0, "chars");
  if (chars && !chars->is_none() && !chars->is_string()) return filter_error("trim", "chars must be a string");
  const std::optional<std::string> set = chars && chars->is_string() ? std::optional(chars->as_string()) : std::nullopt;
  return value(python_strip(text_of(v), set, true, true));
}

result<value> replace(renderer& r, const value& v, const call_args& args) {
  const value* old = args.get(0, "old");
  const value* with = args.get(1, "new");
  const value* count = args.get(2, "count");
  if (!old || !with) return filter_error("replace", "takes the old and the new text");
  if (count && !count->is_none() && !count->is_int()) return filter_error("replace", "count must be an integer");
  auto out = python_replace(text_of(v), text_of(*old), text_of(*with), count && count->is_int() ? count->as_int() : -1,
                            r.limits().max_output_bytes);
  if (!out) return std::unexpected(r.check_size(r.limits().max_output_bytes + 1).error());
  return value(std::move(*out));
}

std::optional<std::int64_t> parse_int(const std::string& text) {
  const std::string s = python_strip(text, std::nullopt, true, true);
  std::int64_t i = 0;
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), i);
  if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return i;
  double d = 0;
  const auto [fend, fec] = std::from_chars(begin, s.data() + s.size(), d);
  if (fec == std::errc() && fend == s.data() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

result<value> int_filter(renderer&, const value& v, const call_args& args) {
  const value* fallback = args.get(0, "default");
  if (v.is_int()) return v;
  if (v.is_bool()) return value(v.as_bool() ? 1 : 0);
  if (v.is_float() && std::isfinite(v.as_double()) && std::fabs(v.as_double()) < 9.2e18) {
    return value(static_cast<std::int64_t>(v.as_double()));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string())) return value(*i);
  }
  return fallback ? *fallback : value(0);
}

result<value> float_filter(renderer&, const value& v, const call_args& args) {
  if (v.is_number() || v.is_bool()) return value(v.as_double());
  if (v.is_string()) {
    const std::string s = python_strip(v.as_string(), std::nullopt, true, true);
    double d = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return value(d);
  }
  const value* fallback = args.get(0, "default");
  return fallback ? *fallback : value(0.0);
}

result<value> round_filter(renderer&, const value& v, const call_args& args) {
  if (!v.is_number() && !v.is_bool()) return filter_error("round", "needs a number");
  const value* precision = args.get(0, "precision");
  const value* method = args.get(1, "method");
  const std::int64_t digits = precision && precision->is_int() ? std::clamp<std::int64_t>(precision->as_int(), -20, 20) : 0;
  const std::string how = method && method->is_string() ? method->as_string() : "common";
  const double scale = std::pow(10.0, static_cast<double>(digits));
  const double x = v.as_double() * scale;
  double rounded = 0;
  if (how == "common") rounded = std::nearbyint(x);  // ties to even, as Python's round()
  else if (how == "ceil") rounded = std::ceil(x);
  else if (how == "floor") rounded = std::floor(x);
  else return filter_error("round", "method must be common, ceil or floor");
  return value(rounded / scale);
}

result<value> abs_filter(renderer&, const value& v, const call_args&) {
  if (v.is_int()) {
    if (v.as_int() == INT64_MIN) return filter_error("abs", "integer overflow");
    return value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_bool()) return value(v.as_bool() ? 1 : 0);
  if (v.is_float()) return value(std::fabs(v.as_double()));
  return filter_error("abs", "needs a number");
}

result<value> escape(renderer&, const value& v, const call_args&) {
  std::string out;
  for (const char c : text_of(v)) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&#34;";
    else if (c == '\'') out += "&#39;";
    else out += c;
  }
  return value(std::move(out));
}

result<value> indent(renderer& r, const value& v, const call_args& args) {
  const value* width = args.get(0, "width");
  std::string pad(4, ' ');
  if (width && width->is_string()) pad = width->as_string();
  else if (width && width->is_int()) pad = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(width->as_int(), 0, 64)), ' ');
  const bool indent_first = flag(args, 1, "first");
  const bool indent_blank = flag(args, 2, "blank");
  std::string out;
  const std::string text = text_of(v);
  std::size_t begin = 0;
  for (bool is_first = true; begin <= text.size(); is_first = false) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + begin, end - begin);
    if ((!is_first || indent_first) && (indent_blank || !line.empty())) out += pad;
    out += line;
    if (end < text.size()) out += '\n';
    if (auto ok = r.check_size(out.size()); !ok) return std::unexpected(ok.error());
    begin = end + 1;
  }
  return value(std::move(out));
}

result<value> string_filter(renderer&, const value& v, const call_args&) { return value(text_of(v)); }
result<value> safe(renderer&, const value& v, const call_args&) { return v; }
result<value> upper(renderer&, const value& v, const call_args&) { return value(ascii_upper(text_of(v))); }
result<value> lower(renderer&, const value& v, const call_args&) { return value(ascii_lower(text_of(v))); }
result<value> title(renderer&, const value& v, const call_args&) { return value(jinja_title(text_of(v))); }
result<value> capitalize(renderer&, const value& v, const call_args&) { return value(python_capitalize(text_of(v))); }

struct named_filter {
  std::string_view name;
  filter_fn fn;
};

const std::array<named_filter, 38> filters{{
    {"tojson", tojson},         {"length", length},         {"count", length},        {"default", default_filter},
    {"d", default_filter},      {"trim", trim},             {"replace", replace},     {"int", int_filter},
    {"float", float_filter},    {"round", round_filter},    {"abs", abs_filter},      {"escape", escape},
    {"e", escape},              {"indent", indent},         {"string", string_filter}, {"safe", safe},
    {"upper", upper},           {"lower", lower},           {"title", title},         {"capitalize", capitalize},
    {"join", join_filter},      {"first", first_filter},    {"last", last_filter},    {"items", items_filter},
    {"list", list_filter},      {"select", select_filter},  {"reject", reject_filter}, {"selectattr", selectattr_filter},
    {"rejectattr", rejectattr_filter}, {"map", map_filter}, {"unique", unique_filter}, {"sort", sort_filter},
    {"reverse", reverse_filter},       {"dictsort", dictsort_filter}, {"min", min_filter},    {"max", max_filter},
    {"sum", sum_filter},               {"attr", attr_filter},
}};

const named_filter* find_filter(std::string_view name) {
  for (const auto& f : filters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

bool is_known_filter(std::string_view name) { return find_filter(name) != nullptr; }

result<value> apply_filter(renderer& r, std::string_view name, const value& subject, const call_args& args) {
  const named_filter* f = find_filter(name);
  if (!f) return std::unexpected(error{errc::invalid_argument, "unknown filter '" + std::string(name) + "'"});
  return f->fn(r, subject, args);
}

}  // namespace inflight::jinja
