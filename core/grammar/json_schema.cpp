// JSON Schema -> grammar. Every keyword is either used, accepted as an annotation, or an
// error naming it and its JSON pointer; nothing is ignored silently. The supported
// keywords and the whitespace policy are listed in docs/structured-outputs.md.
#include <algorithm>
#include <cctype>

#include "core/grammar/front_ends.hpp"
#include "core/grammar/json_schema_compiler.hpp"

namespace inflight {
namespace json_schema_detail {

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
  for (const auto& [key, value] : s.items()) {
    if (!used_keywords().contains(key) && !annotation_keywords().contains(key))
      return unsupported("unsupported JSON Schema keyword '" + key + "'", path);
  }
  if (s.contains("$ref")) return ref(s, path);
  if (s.contains("allOf")) return all_of(s, path);
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

result<void> schema_compiler::only_beside(const ojson& s, const std::string& keyword, const std::string& path,
                         std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : s.items()) {
    if (key == keyword || key == "$defs" || key == "definitions" || annotation_keywords().contains(key)) continue;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    return unsupported("JSON Schema keyword '" + key + "' beside '" + keyword + "' is not supported", path);
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
  if (has_any(s, {"properties", "required", "additionalProperties"})) types.push_back("object");
  if (has_any(s, {"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) types.push_back("array");
  if (has_any(s, {"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
  if (has_any(s, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) types.push_back("number");
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

result<const ojson*> schema_compiler::resolve(const std::string& ref, const std::string& path) {
  if (ref.empty() || ref[0] != '#')
    return unsupported("only local $ref ('#...') is supported, not '" + ref + "'", path + "/$ref");
  const ojson* cur = &root_;
  std::size_t i = 1;
  if (i < ref.size() && ref[i] != '/') return unsupported("$ref to an anchor ('" + ref + "') is not supported", path + "/$ref");
  while (i < ref.size()) {
    const std::size_t next = ref.find('/', i + 1);
    std::string token = ref.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    std::string key;
    for (std::size_t k = 0; k < token.size(); ++k) {
      if (token[k] == '~' && k + 1 < token.size()) {
        key += token[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        key += token[k];
      }
    }
    if (cur->is_object() && cur->contains(key)) {
      cur = &(*cur)[key];
    } else if (cur->is_array() && !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit) &&
               std::stoul(key) < cur->size()) {
      cur = &(*cur)[std::stoul(key)];
    } else {
      return invalid("$ref '" + ref + "' points at nothing", path + "/$ref");
    }
    i = next == std::string::npos ? ref.size() : next;
  }
  return cur;
}

result<gexpr> schema_compiler::ref(const ojson& s, const std::string& path) {
  if (auto ok = only_beside(s, "$ref", path, {}); !ok) return std::unexpected(ok.error());
  if (!s["$ref"].is_string()) return invalid("'$ref' must be a string", path + "/$ref");
  const std::string target = s["$ref"].get<std::string>();
  if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return g_ref(it->second);
  auto resolved = resolve(target, path);
  if (!resolved) return std::unexpected(resolved.error());
  const std::uint32_t id = b_.declare("ref:" + target);
  ref_rules_[target] = id;
  auto body = schema(**resolved, target.substr(1));
  if (!body) return body;
  b_.define(id, std::move(*body));
  return g_ref(id);
}

result<gexpr> schema_compiler::any_of(const ojson& s, const std::string& path) {
  const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
  if (s.contains("anyOf") && s.contains("oneOf"))
    return unsupported("'anyOf' and 'oneOf' together are not supported", path);
  if (auto ok = only_beside(s, key, path, {}); !ok) return std::unexpected(ok.error());
  const ojson& list = s[key];
  if (!list.is_array() || list.empty()) return invalid(std::string("'") + key + "' must be a non-empty array", path);
  std::vector<gexpr> alts;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto e = schema(list[i], path + "/" + key + "/" + std::to_string(i));
    if (!e) return e;
    alts.push_back(std::move(*e));
  }
  return g_alt(std::move(alts));
}

result<gexpr> schema_compiler::all_of(const ojson& s, const std::string& path) {
  const ojson& list = s["allOf"];
  if (!list.is_array() || list.empty()) return invalid("'allOf' must be a non-empty array", path);
  ojson merged = ojson::object();
  ojson own = s;
  own.erase("allOf");
  std::vector<std::pair<const ojson*, std::string>> members{{&own, path}};
  for (std::size_t i = 0; i < list.size(); ++i) members.push_back({&list[i], path + "/allOf/" + std::to_string(i)});
  std::vector<std::pair<const ojson*, std::string>> objects;  // the members, $refs followed
  for (auto [member, member_path] : members) {
    const ojson* m = member;
    while (m->is_object() && m->contains("$ref") && m->size() == 1 && (*m)["$ref"].is_string()) {
      auto r = resolve((*m)["$ref"].get<std::string>(), member_path);
      if (!r) return std::unexpected(r.error());
      m = *r;
    }
    if (m->is_boolean()) {
      if (m->get<bool>()) continue;
      return invalid("the schema 'false' admits no value", member_path);
    }
    if (!m->is_object()) return invalid("a schema must be an object or a boolean", member_path);
    if (auto ok = merge_into(merged, *m, member_path); !ok) return std::unexpected(ok.error());
    objects.push_back({m, member_path});
  }
  if (auto ok = apply_member_additional_properties(merged, objects); !ok) return std::unexpected(ok.error());
  return schema(merged, path);
}

// A member's additionalProperties speaks of every name outside that member's own
// properties, including names other members declare: false forbids them (a required one
// makes the schema admit no value), a schema applies to them as well.
result<void> schema_compiler::apply_member_additional_properties(
    ojson& merged, const std::vector<std::pair<const ojson*, std::string>>& members) {
  if (!merged.contains("properties") || !merged["properties"].is_object()) return {};
  for (const auto& [m, member_path] : members) {
    if (!m->contains("additionalProperties") || (*m)["additionalProperties"] == true) continue;
    const ojson& extra = (*m)["additionalProperties"];
    const ojson* own = m->contains("properties") && (*m)["properties"].is_object() ? &(*m)["properties"] : nullptr;
    std::vector<std::string> forbidden;
    for (auto& [name, sub] : merged["properties"].items()) {
      if (own && own->contains(name)) continue;
      if (extra == false) forbidden.push_back(name);
      else sub = ojson{{"allOf", ojson::array({sub, extra})}};
    }
    for (const auto& name : forbidden) {
      const bool is_required = merged.contains("required") && merged["required"].is_array() &&
                               std::find(merged["required"].begin(), merged["required"].end(), name) != merged["required"].end();
      if (is_required) {
        return invalid("property '" + name + "' is required, but this 'additionalProperties': false forbids it "
                       "(it is not among the properties beside it), so the schema admits no value", member_path);
      }
      merged["properties"].erase(name);
    }
  }
  return {};
}

result<void> schema_compiler::merge_into(ojson& merged, const ojson& m, const std::string& path) {
  for (const auto& [key, value] : m.items()) {
    if (annotation_keywords().contains(key) || key == "$defs" || key == "definitions") continue;
    if (!merged.contains(key)) {
      merged[key] = value;
    } else if (key == "properties") {
      if (!value.is_object() || !merged[key].is_object()) return invalid("'properties' must be an object", path);
      for (const auto& [name, sub] : value.items()) {
        if (merged[key].contains(name))
          merged[key][name] = ojson{{"allOf", ojson::array({merged[key][name], sub})}};
        else
          merged[key][name] = sub;
      }
    } else if (key == "required") {
      if (!value.is_array() || !merged[key].is_array()) return invalid("'required' must be an array of strings", path);
      for (const auto& name : value)
        if (std::find(merged[key].begin(), merged[key].end(), name) == merged[key].end()) merged[key].push_back(name);
    } else if (key == "additionalProperties" && (value == false || merged[key] == false)) {
      merged[key] = false;
    } else if (key == "allOf") {
      if (!value.is_array() || !merged[key].is_array()) return invalid("'allOf' must be a non-empty array", path);
      for (const auto& sub : value) merged[key].push_back(sub);
    } else if (merged[key] != value) {
      return unsupported("allOf members that disagree on '" + key + "' cannot be merged", path);
    }
  }
  return {};
}

result<gexpr> schema_compiler::enum_values(const ojson& s, const std::string& path) {
  if (s.contains("enum") && s.contains("const")) return unsupported("'enum' and 'const' together are not supported", path);
  const char* key = s.contains("enum") ? "enum" : "const";
  if (auto ok = only_beside(s, key, path, {"type"}); !ok) return std::unexpected(ok.error());
  std::vector<std::string> types;
  if (s.contains("type")) {
    auto t = types_of(s, path);
    if (!t) return std::unexpected(t.error());
    types = *t;
  }
  ojson values = s.contains("enum") ? s["enum"] : ojson::array({s["const"]});
  if (!values.is_array() || values.empty()) return invalid("'enum' must be a non-empty array", path + "/enum");
  std::vector<gexpr> alts;
  for (const auto& v : values) {
    const bool fits = types.empty() || std::any_of(types.begin(), types.end(), [&](auto& t) { return type_matches(v, t); });
    if (fits) alts.push_back(g_literal(v.dump()));
  }
  if (alts.empty()) return invalid("no value of '" + std::string(key) + "' has the schema's 'type'", path);
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(alts);
  return e;
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
  const bool has_length = min_len->has_value() || max_len->has_value();
  if (s.contains("format")) {
    if (!s["format"].is_string()) return invalid("'format' must be a string", path + "/format");
    const std::string format = s["format"].get<std::string>();
    auto re = json_text::format_regex(format);
    if (!re) return unsupported("unsupported JSON Schema format '" + format + "'", path + "/format");
    if (has_length || s.contains("pattern"))
      return unsupported("'format' together with 'pattern', 'minLength' or 'maxLength' is not supported", path);
    auto content = regex_to_gexpr(*re);
    if (!content) return make_error(errc::internal, content.error().message);
    return json_text::string_with_content(*content);
  }
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return invalid("'pattern' must be a string", path + "/pattern");
    if (has_length) return unsupported("'pattern' together with 'minLength' or 'maxLength' is not supported", path);
    return pattern_string(s["pattern"].get<std::string>(), path + "/pattern");
  }
  const std::uint32_t lo = min_len->value_or(0);
  if (*max_len && **max_len < lo) return invalid("'maxLength' is below 'minLength'", path);
  return json_text::string_of_length(lo, *max_len);
}

result<gexpr> schema_compiler::pattern_string(std::string pattern, const std::string& path) {
  const bool is_anchored_start = pattern.starts_with("^");
  bool is_anchored_end = pattern.ends_with("$");
  if (is_anchored_end) {
    std::size_t num_backslashes = 0;
    for (std::size_t i = pattern.size() - 1; i-- > 0 && pattern[i] == '\\';) ++num_backslashes;
    is_anchored_end = num_backslashes % 2 == 0;
  }
  if (is_anchored_start) pattern.erase(0, 1);
  if (is_anchored_end) pattern.pop_back();
  auto content = regex_to_gexpr("(?:" + pattern + ")");
  if (!content) return unsupported("unsupported 'pattern': " + content.error().message, path);
  gexpr any_text = g_star(g_codepoints({{0, max_codepoint}}, false));
  std::vector<gexpr> parts;
  if (!is_anchored_start) parts.push_back(any_text);
  parts.push_back(std::move(*content));
  if (!is_anchored_end) parts.push_back(any_text);
  return json_text::string_with_content(g_seq(std::move(parts)));
}

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
  if (!std::isfinite(*value) || std::fabs(*value) > 1e18)
    return unsupported(std::string("'") + key + "' beyond +-1e18 is not supported", path);
  double v = *value;
  if (is_integer) {
    // Integers: the nearest integral bound, always inclusive.
    if (is_lower) v = is_exclusive ? std::floor(v) + 1 : std::ceil(v);
    else v = is_exclusive ? std::ceil(v) - 1 : std::floor(v);
    is_exclusive = false;
  } else if (std::floor(v) != v) {
    return unsupported(std::string("a non-integral '") + (s.contains(key) ? key : excl_key) +
                           "' for type 'number' is not supported",
                       path);
  }
  return std::optional<json_text::number_bound>{json_text::number_bound{static_cast<std::int64_t>(v), is_exclusive}};
}

result<gexpr> schema_compiler::integer_schema(const ojson& s, const std::string& path) {
  auto lo = bound(s, "minimum", "exclusiveMinimum", true, true, path);
  if (!lo) return std::unexpected(lo.error());
  auto hi = bound(s, "maximum", "exclusiveMaximum", false, true, path);
  if (!hi) return std::unexpected(hi.error());
  std::optional<std::int64_t> a, b;
  if (*lo) a = (*lo)->value;
  if (*hi) b = (*hi)->value;
  if (a && b && *a > *b) return invalid("no integer lies within the bounds", path);
  return json_text::integer_range(a, b);
}

result<gexpr> schema_compiler::number_schema(const ojson& s, const std::string& path) {
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

}  // namespace json_schema_detail

result<grammar> grammar_from_json_schema(std::string_view schema_text) {
  using json_schema_detail::ojson;
  ojson schema = ojson::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return make_error(errc::invalid_argument, "the JSON Schema is not valid JSON");
  return json_schema_detail::schema_compiler(schema).compile();
}

result<grammar> grammar_from_framed_json(const framed_json_spec& spec) {
  using json_schema_detail::ojson;
  ojson schema = ojson::parse(spec.schema, nullptr, false);
  if (schema.is_discarded()) return make_error(errc::invalid_argument, "the JSON Schema is not valid JSON");
  return json_schema_detail::schema_compiler(schema).compile_framed(spec);
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
