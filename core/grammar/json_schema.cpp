// JSON Schema -> grammar: dispatch and scalars. A keyword that validates is enforced
// (exactly, or by a documented subset of its language) or refused with an error naming it
// and its JSON pointer; keywords that validate nothing (annotations, extensions) are
// ignored unless json_schema_options::is_strict_keywords. The supported keywords and the
// whitespace policy are listed in docs/structured-outputs.md.
#include <algorithm>
#include <cctype>

#include "core/grammar/front_ends.hpp"
#include "core/grammar/json_schema_compiler.hpp"

namespace inflight {
namespace json_schema_detail {

static bool is_integer_format(const ojson& s) {
  return s.contains("format") && (s["format"] == "int32" || s["format"] == "int64");
}

result<grammar> schema_compiler::compile() {
  const std::uint32_t root = b_.declare("root");
  auto e = schema(root_, "");
  if (!e) return std::unexpected(e.error());
  b_.define(root, std::move(*e));
  return b_.build(root);
}

result<grammar> schema_compiler::compile_framed(const framed_json_spec& frame) {
  if (frame.max_items && *frame.max_items < frame.min_items)
    return make_error(errc::invalid_argument, "framed JSON: max_items is below min_items");
  if (frame.min_items > json_text_max_count || (frame.max_items && *frame.max_items > json_text_max_count))
    return make_error(errc::unsupported, "framed JSON: more than " + std::to_string(json_text_max_count) + " items");
  const std::uint32_t root = b_.declare("root");
  auto e = schema(root_, "");
  if (!e) return std::unexpected(e.error());
  const std::uint32_t item = as_rule(g_seq({g_literal(frame.begin), std::move(*e), g_literal(frame.end)}), "item");
  if (frame.max_items == std::optional<std::uint32_t>(0)) {
    b_.define(root, g_seq({}));
    return b_.build(root);
  }
  const std::uint32_t min_rest = frame.min_items == 0 ? 0 : frame.min_items - 1;
  const std::optional<std::uint32_t> max_rest =
      frame.max_items ? std::optional<std::uint32_t>(*frame.max_items - 1) : std::nullopt;
  gexpr items = g_seq({g_ref(item), g_repeat(g_seq({g_literal(frame.separator), g_ref(item)}), min_rest, max_rest)});
  b_.define(root, frame.min_items == 0 ? g_optional(std::move(items)) : std::move(items));
  return b_.build(root);
}

result<gexpr> schema_compiler::schema(const ojson& s, const std::string& path) {
  if (depth_ >= max_depth) return unsupported("JSON Schema nesting deeper than " + std::to_string(max_depth), path);
  ++depth_;
  auto e = schema_at_depth(s, path);
  --depth_;
  return e;
}

result<gexpr> schema_compiler::schema_at_depth(const ojson& s, const std::string& path) {
  if (s.is_boolean()) {
    if (s.get<bool>()) return g_ref(any_value());
    return invalid("the schema 'false' admits no value", path);
  }
  if (!s.is_object()) return invalid("a schema must be an object or a boolean", path);
  if (auto ok = check_keywords(s, path); !ok) return std::unexpected(ok.error());
  if (s.contains("$ref")) return ref(s, path);
  if (s.contains("allOf")) return all_of(s, path);
  if (s.contains("not")) {
    auto rest = without_not(s, path);
    if (!rest) return std::unexpected(rest.error());
    return schema(*rest, path);
  }
  if (has_any(s, {"if", "then", "else"})) return conditional(s, path);
  if (has_any(s, {"dependentSchemas", "dependencies"})) return dependent_schemas(s, path);
  if (s.contains("anyOf") || s.contains("oneOf")) return any_of(s, path);
  if (s.contains("enum") || s.contains("const")) return enum_values(s, path);
  auto types = types_of(s, path);
  if (!types) return std::unexpected(types.error());
  if (types->empty()) return g_ref(any_value());
  std::vector<gexpr> alts;
  for (const auto& t : *types) {
    auto e = typed(s, t, path);
    if (!e) return e;
    alts.push_back(std::move(*e));
  }
  return g_alt(std::move(alts));
}

result<void> schema_compiler::check_keywords(const ojson& s, const std::string& path) const {
  for (const auto& [key, value] : s.items()) {
    if (refused_keywords().contains(key)) return unsupported("unsupported JSON Schema keyword '" + key + "'", path);
    if (options_.is_strict_keywords && is_ignored_keyword(key) && !annotation_keywords().contains(key))
      return unsupported("unknown JSON Schema keyword '" + key + "' (strict_keywords)", path);
  }
  return {};
}

result<std::vector<std::string>> schema_compiler::types_of(const ojson& s, const std::string& path) {
  static const std::set<std::string> known{"string", "number", "integer", "boolean", "null", "object", "array"};
  std::vector<std::string> types;
  if (s.contains("type")) {
    const ojson& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const auto& x : t) {
        if (!x.is_string()) return invalid("'type' must hold strings", path + "/type");
        types.push_back(x.get<std::string>());
      }
    } else {
      return invalid("'type' must be a string or a non-empty array", path + "/type");
    }
    for (const auto& x : types)
      if (!known.contains(x)) return unsupported("unsupported JSON Schema type '" + x + "'", path + "/type");
    return types;
  }
  // No type: the kinds its keywords constrain (none: any value).
  if (has_any(s, {"properties", "required", "additionalProperties", "patternProperties", "minProperties",
                  "maxProperties", "dependentRequired", "propertyNames"}))
    types.push_back("object");
  if (has_any(s, {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"}))
    types.push_back("array");
  if (has_any(s, {"minLength", "maxLength", "pattern"}) || (s.contains("format") && !is_integer_format(s)))
    types.push_back("string");
  if (has_any(s, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) || is_integer_format(s))
    types.push_back("number");
  return types;
}

result<gexpr> schema_compiler::typed(const ojson& s, const std::string& type, const std::string& path) {
  if (type == "string") return string_schema(s, path);
  if (type == "integer") return integer_schema(s, path);
  if (type == "number") return number_schema(s, path);
  if (type == "boolean") return g_alt({g_literal("true"), g_literal("false")});
  if (type == "null") return g_literal("null");
  if (type == "object") return object_schema(s, path);
  return array_schema(s, path);
}

result<std::optional<std::uint32_t>> schema_compiler::count_keyword(const ojson& s, const char* key, const std::string& path) {
  if (!s.contains(key)) return std::optional<std::uint32_t>{};
  const ojson& v = s[key];
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))
    return invalid(std::string("'") + key + "' must be a non-negative integer", path + "/" + key);
  const double d = v.get<double>();
  if (d < 0) return invalid(std::string("'") + key + "' must be a non-negative integer", path + "/" + key);
  if (d > json_text_max_count)
    return unsupported(std::string("'") + key + "' over " + std::to_string(json_text_max_count) + " is not supported",
                       path + "/" + key);
  return std::optional<std::uint32_t>{static_cast<std::uint32_t>(d)};
}

result<gexpr> schema_compiler::string_schema(const ojson& s, const std::string& path) {
  auto min_len = count_keyword(s, "minLength", path);
  if (!min_len) return std::unexpected(min_len.error());
  auto max_len = count_keyword(s, "maxLength", path);
  if (!max_len) return std::unexpected(max_len.error());
  const std::uint32_t lo = min_len->value_or(0);
  if (*max_len && **max_len < lo) return invalid("'maxLength' is below 'minLength'", path);
  auto format = format_string(s, min_len->has_value() || max_len->has_value(), path);
  if (!format) return std::unexpected(format.error());
  if (*format) {
    if (s.contains("pattern")) return unsupported("'format' together with 'pattern' is not supported", path);
    return std::move(**format);
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return invalid("'pattern' must be a string", path + "/pattern");
    return pattern_string(s["pattern"].get<std::string>(), path + "/pattern", lo, *max_len);
  }
  return json_text::string_of_length(b_, lo, *max_len);
}

// A string `format` this compiler writes, or nullopt: an unknown one is an annotation
// (an error under strict_keywords). Beside minLength / maxLength when every string of the
// format fits them, when the format's one repeated part can carry them (fit_length), and
// for e-mail addresses (a subset of them whose parts carry the bounds).
result<std::optional<gexpr>> schema_compiler::format_string(const ojson& s, bool has_length, const std::string& path) {
  if (!s.contains("format")) return std::optional<gexpr>{};
  if (!s["format"].is_string()) return invalid("'format' must be a string", path + "/format");
  const std::string format = s["format"].get<std::string>();
  auto f = json_text::string_format(format);
  if (!f) {
    if (options_.is_strict_keywords)
      return unsupported("unsupported JSON Schema format '" + format + "'", path + "/format");
    return std::optional<gexpr>{};
  }
  auto content = regex_to_gexpr(f->regex);
  if (!content) return make_error(errc::internal, content.error().message);
  if (has_length) {
    // Counts were checked by string_schema; past 2^32 - 1 a maximum bounds nothing here.
    const double lo = s.value("minLength", 0.0);
    const double hi = s.contains("maxLength") ? s["maxLength"].get<double>() : 1e18;
    const auto lo32 = static_cast<std::uint32_t>(std::min(lo, 4294967295.0));
    const auto hi32 = hi < 4294967295.0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(hi)) : std::nullopt;
    auto fitted = json_text::fit_length(b_, *content, lo32, hi32);
    // E-mail addresses of a bounded length: a subset whose parts carry the bounds.
    if (!fitted && (format == "email" || format == "idn-email")) {
      if (auto bounded = json_text::bounded_email(lo32, hi32)) {
        auto e = regex_to_gexpr(*bounded);
        if (!e) return make_error(errc::internal, e.error().message);
        fitted = std::move(*e);
      }
    }
    if (!fitted)
      return unsupported("'format' '" + format + "' together with 'minLength' or 'maxLength' is not supported", path);
    content = std::move(*fitted);
  }
  return std::optional<gexpr>{json_text::string_with_content(*content)};
}

// ECMA-262 meanings the shared regex dialect gives otherwise: `.` matches no line
// terminator (\n, \r, U+2028, U+2029), and \s matches Unicode spaces too, so \S and a
// negated class holding \s exclude them.
static std::string ecma_pattern(const std::string& p) {
  static const std::string unicode_spaces = R"(\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff)";
  std::string out;
  bool is_in_class = false, is_negated_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (!is_in_class && n == 'S') out += "[^\\s" + unicode_spaces + "]";
      else if (is_in_class && is_negated_class && n == 's') out += "\\s" + unicode_spaces;
      else out += std::string{c, n};
      continue;
    }
    if (is_in_class) {
      if (c == ']') is_in_class = false;
      out += c;
    } else if (c == '[') {
      is_in_class = true;
      is_negated_class = i + 1 < p.size() && p[i + 1] == '^';
      out += c;
    } else if (c == '.') {
      out += R"([^\n\r\u2028\u2029])";
    } else {
      out += c;
    }
  }
  return out;
}

result<gexpr> schema_compiler::pattern_string(std::string pattern, const std::string& path, std::uint32_t min_length,
                                             std::optional<std::uint32_t> max_length) {
  const bool has_length = min_length > 0 || max_length;
  const bool is_anchored_start = pattern.starts_with("^");
  bool is_anchored_end = pattern.ends_with("$");
  if (is_anchored_end) {
    std::size_t num_backslashes = 0;
    for (std::size_t i = pattern.size() - 1; i-- > 0 && pattern[i] == '\\';) ++num_backslashes;
    is_anchored_end = num_backslashes % 2 == 0;
  }
  if (is_anchored_start) pattern.erase(0, 1);
  if (is_anchored_end) pattern.pop_back();
  auto content = regex_to_gexpr("(?:" + ecma_pattern(pattern) + ")");
  if (!content) return unsupported("unsupported 'pattern': " + content.error().message, path);
  gexpr any_text = g_star(g_codepoints({{0, max_codepoint}}, false));
  std::vector<gexpr> parts;
  // With a length, an unanchored start is anchored (a subset): one free side is enough.
  if (!is_anchored_start && !has_length) parts.push_back(any_text);
  parts.push_back(std::move(*content));
  if (!is_anchored_end) parts.push_back(any_text);
  gexpr all = g_seq(parts);
  if (has_length) {
    auto fitted = json_text::fit_length(b_, all, min_length, max_length);
    // With an unanchored end, the pattern anchored there is a subset that may fit.
    if (!fitted && !is_anchored_end) {
      parts.pop_back();
      fitted = json_text::fit_length(b_, g_seq(parts), min_length, max_length);
    }
    if (!fitted)
      return unsupported("'pattern' together with 'minLength' or 'maxLength' is supported only where one part of "
                         "the pattern repeats a single character",
                         path);
    all = std::move(*fitted);
  }
  return json_text::string_with_content(all);
}

// A bound of `key` (or `excl_key`), as an integral bound: integers round inward to an
// inclusive bound, numbers with a non-integral bound too (a subset: 0.5 <= x becomes
// 1 <= x). Past +-1e18 an outer bound is clamped there (a subset); an inner one is an error.
result<std::optional<json_text::number_bound>> schema_compiler::bound(const ojson& s, const char* key, const char* excl_key,
                                                    bool is_lower, bool is_integer, const std::string& path) {
  std::optional<double> value;
  bool is_exclusive = false;
  if (s.contains(key)) {
    if (!s[key].is_number()) return invalid(std::string("'") + key + "' must be a number", path + "/" + key);
    value = s[key].get<double>();
  }
  if (s.contains(excl_key)) {
    const ojson& e = s[excl_key];
    if (e.is_boolean()) {  // draft 4: a flag on minimum / maximum
      is_exclusive = e.get<bool>();
    } else if (e.is_number()) {
      const double x = e.get<double>();
      if (!value || (is_lower ? x >= *value : x <= *value)) {
        value = x;
        is_exclusive = true;
      }
    } else {
      return invalid(std::string("'") + excl_key + "' must be a number", path + "/" + excl_key);
    }
  }
  if (!value) return std::optional<json_text::number_bound>{};
  constexpr double limit = 1e18;
  if (std::isnan(*value)) return invalid(std::string("'") + key + "' must be a number", path);
  if (is_lower ? *value < -limit : *value > limit) return std::optional<json_text::number_bound>{json_text::number_bound{
      static_cast<std::int64_t>(is_lower ? -limit : limit), false}};
  if (std::fabs(*value) > limit) return unsupported(std::string("'") + key + "' beyond +-1e18 is not supported", path);
  double v = *value;
  if (is_integer || std::floor(v) != v) {
    if (is_lower) v = is_exclusive ? std::floor(v) + 1 : std::ceil(v);
    else v = is_exclusive ? std::ceil(v) - 1 : std::floor(v);
    is_exclusive = false;
  }
  return std::optional<json_text::number_bound>{json_text::number_bound{static_cast<std::int64_t>(v), is_exclusive}};
}

// An integer `format` (int32, int64) as bounds; other formats of numbers validate nothing.
static void format_bounds(const ojson& s, std::optional<std::int64_t>& lo, std::optional<std::int64_t>& hi) {
  if (!s.contains("format") || !s["format"].is_string()) return;
  const std::string f = s["format"].get<std::string>();
  // int64: the integers a double holds exactly, as validators that parse JSON numbers into
  // doubles can check them.
  const std::int64_t max = f == "int32" ? 2147483647LL : f == "int64" ? 9007199254740991LL : 0;
  if (max == 0) return;
  const std::int64_t min = f == "int32" ? -2147483648LL : -max;
  lo = lo ? std::max(*lo, min) : min;
  hi = hi ? std::min(*hi, max) : max;
}

result<gexpr> schema_compiler::integer_schema(const ojson& s, const std::string& path) {
  auto lo = bound(s, "minimum", "exclusiveMinimum", true, true, path);
  if (!lo) return std::unexpected(lo.error());
  auto hi = bound(s, "maximum", "exclusiveMaximum", false, true, path);
  if (!hi) return std::unexpected(hi.error());
  std::optional<std::int64_t> a, b;
  if (*lo) a = (*lo)->value;
  if (*hi) b = (*hi)->value;
  format_bounds(s, a, b);
  if (a && b && *a > *b) return invalid("no integer lies within the bounds", path);
  if (s.contains("multipleOf")) return multiple_of(s["multipleOf"], a, b, path);
  return json_text::integer_range(a, b);
}

result<gexpr> schema_compiler::number_schema(const ojson& s, const std::string& path) {
  if (is_integer_format(s) || s.contains("multipleOf")) return integer_schema(s, path);  // a subset
  auto lo = bound(s, "minimum", "exclusiveMinimum", true, false, path);
  if (!lo) return std::unexpected(lo.error());
  auto hi = bound(s, "maximum", "exclusiveMaximum", false, false, path);
  if (!hi) return std::unexpected(hi.error());
  if (!*lo && !*hi) return g_ref(number_rule());
  if (*lo && *hi) {
    const auto& l = **lo;
    const auto& h = **hi;
    if (l.value > h.value || (l.value == h.value && (l.is_exclusive || h.is_exclusive)))
      return invalid("no number lies within the bounds", path);
  }
  return json_text::bounded_number(*lo, *hi);
}

// multipleOf k (integral; on a number, integers only: a subset): the multiples within the
// bounds when there are few, else the multiples of up to 15 digits (a double holds them
// exactly, so validators divide them without rounding).
result<gexpr> schema_compiler::multiple_of(const ojson& k_json, std::optional<std::int64_t> lo,
                                           std::optional<std::int64_t> hi, const std::string& path) {
  if (!k_json.is_number() || k_json.get<double>() <= 0)
    return invalid("'multipleOf' must be a number above 0", path + "/multipleOf");
  const double kd = k_json.get<double>();
  if (std::floor(kd) != kd || kd > 1000000)
    return unsupported("'multipleOf' other than an integer up to 1000000 is not supported", path + "/multipleOf");
  const auto k = static_cast<std::int64_t>(kd);
  if (k == 1) return json_text::integer_range(lo, hi);
  if (lo && hi) {
    const std::int64_t first = (*lo >= 0 ? (*lo + k - 1) / k : -((-*lo) / k)) * k;
    if (first > *hi) return invalid("no multiple of 'multipleOf' lies within the bounds", path);
    if ((*hi - first) / k < 256) {
      std::vector<gexpr> alts;
      for (std::int64_t v = first; v <= *hi; v += k) alts.push_back(g_literal(std::to_string(v)));
      return g_alt(std::move(alts));
    }
  }
  if (lo || hi) return unsupported("'multipleOf' with bounds that hold many multiples is not supported", path);
  if (k > 50) return unsupported("'multipleOf' above 50 without bounds is not supported", path + "/multipleOf");
  return json_text::integer_multiples(b_, static_cast<std::uint32_t>(k), 15);
}

}  // namespace json_schema_detail

result<grammar> grammar_from_json_schema(std::string_view schema_text, const json_schema_options& options) {
  using json_schema_detail::ojson;
  ojson schema = ojson::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return make_error(errc::invalid_argument, "the JSON Schema is not valid JSON");
  return json_schema_detail::schema_compiler(schema, options).compile();
}

result<grammar> grammar_from_framed_json(const framed_json_spec& spec) {
  using json_schema_detail::ojson;
  ojson schema = ojson::parse(spec.schema, nullptr, false);
  if (schema.is_discarded()) return make_error(errc::invalid_argument, "the JSON Schema is not valid JSON");
  return json_schema_detail::schema_compiler(schema, json_schema_options{}).compile_framed(spec);
}

result<grammar> grammar_from_framed_json(std::string_view spec_text) {
  using json_schema_detail::ojson;
  const ojson j = ojson::parse(spec_text, nullptr, false);
  const auto bad = [] {
    return make_error(errc::invalid_argument,
                      "framed JSON must be {\"schema\", \"begin\", \"end\", \"separator\", \"min_items\", \"max_items\"}");
  };
  if (j.is_discarded() || !j.is_object() || !j.contains("schema")) return bad();
  framed_json_spec spec;
  spec.schema = j["schema"].dump();
  for (auto [key, out] : {std::pair{"begin", &spec.begin}, {"end", &spec.end}, {"separator", &spec.separator}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_string()) return bad();
    *out = j[key].get<std::string>();
  }
  if (j.contains("min_items")) {
    if (!j["min_items"].is_number_unsigned()) return bad();
    spec.min_items = static_cast<std::uint32_t>(std::min<std::uint64_t>(j["min_items"].get<std::uint64_t>(), UINT32_MAX));
  }
  if (j.contains("max_items")) {
    if (j["max_items"].is_null()) {
      spec.max_items.reset();
    } else {
      if (!j["max_items"].is_number_unsigned()) return bad();
      spec.max_items = static_cast<std::uint32_t>(std::min<std::uint64_t>(j["max_items"].get<std::uint64_t>(), UINT32_MAX));
    }
  }
  return grammar_from_framed_json(spec);
}

std::string to_json_text(const framed_json_spec& spec) {
  using json_schema_detail::ojson;
  ojson schema = ojson::parse(spec.schema, nullptr, false);
  ojson j = {{"schema", schema.is_discarded() ? ojson(spec.schema) : schema},
             {"begin", spec.begin},
             {"end", spec.end},
             {"separator", spec.separator},
             {"min_items", spec.min_items},
             {"max_items", spec.max_items ? ojson(*spec.max_items) : ojson(nullptr)}};
  return j.dump();
}

}  // namespace inflight
