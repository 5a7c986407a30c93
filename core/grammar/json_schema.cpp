// JSON Schema -> grammar. Every keyword is either used, accepted as an annotation, or an
// error naming it and its JSON pointer; nothing is ignored silently. The supported
// keywords and the whitespace policy are listed in docs/structured-outputs.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/grammar/front_ends.hpp"
#include "core/grammar/json_schema_internal.hpp"

namespace inflight {
namespace {

using ojson = nlohmann::ordered_json;

const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> k{"title",   "description", "examples", "$schema",  "$id",
                                       "default", "$comment",    "deprecated", "readOnly", "writeOnly"};
  return k;
}

const std::set<std::string>& used_keywords() {
  static const std::set<std::string> k{
      "type",      "enum",      "const",    "anyOf",     "oneOf",   "allOf",   "$ref",
      "$defs",     "definitions", "properties", "required", "additionalProperties", "items",
      "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
      "pattern",   "format",    "minimum",  "maximum",   "exclusiveMinimum", "exclusiveMaximum"};
  return k;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string show(const std::string& path) { return path.empty() ? "/" : path; }

std::unexpected<error> unsupported(const std::string& what, const std::string& path) {
  return make_error(errc::unsupported, what + " at " + show(path));
}

std::unexpected<error> invalid(const std::string& what, const std::string& path) {
  return make_error(errc::invalid_argument, "invalid JSON Schema: " + what + " at " + show(path));
}

bool has_any(const ojson& s, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (s.contains(k)) return true;
  return false;
}

bool type_matches(const ojson& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

class schema_compiler {
 public:
  explicit schema_compiler(const ojson& root) : root_(root) {}

  result<grammar> compile() {
    const std::uint32_t root = b_.declare("root");
    auto e = schema(root_, "");
    if (!e) return std::unexpected(e.error());
    b_.define(root, std::move(*e));
    return b_.build(root);
  }

 private:
  // --- dispatch -------------------------------------------------------------------

  // Nesting guard: allOf over "#" and similar self-merges would otherwise never end.
  static constexpr int max_depth = 128;

  result<gexpr> schema(const ojson& s, const std::string& path) {
    if (depth_ >= max_depth) return unsupported("JSON Schema nesting deeper than " + std::to_string(max_depth), path);
    ++depth_;
    auto e = schema_at_depth(s, path);
    --depth_;
    return e;
  }

  result<gexpr> schema_at_depth(const ojson& s, const std::string& path) {
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

  // Keywords that only hold other schemas or annotate may sit beside a combinator.
  result<void> only_beside(const ojson& s, const std::string& keyword, const std::string& path,
                           std::initializer_list<const char*> allowed) {
    for (const auto& [key, value] : s.items()) {
      if (key == keyword || key == "$defs" || key == "definitions" || annotation_keywords().contains(key)) continue;
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      return unsupported("JSON Schema keyword '" + key + "' beside '" + keyword + "' is not supported", path);
    }
    return {};
  }

  result<std::vector<std::string>> types_of(const ojson& s, const std::string& path) {
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

  result<gexpr> typed(const ojson& s, const std::string& type, const std::string& path) {
    if (type == "string") return string_schema(s, path);
    if (type == "integer") return integer_schema(s, path);
    if (type == "number") return number_schema(s, path);
    if (type == "boolean") return g_alt({g_literal("true"), g_literal("false")});
    if (type == "null") return g_literal("null");
    if (type == "object") return object_schema(s, path);
    return array_schema(s, path);
  }

  // --- references and combinators ---------------------------------------------------

  result<const ojson*> resolve(const std::string& ref, const std::string& path) {
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

  result<gexpr> ref(const ojson& s, const std::string& path) {
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

  result<gexpr> any_of(const ojson& s, const std::string& path) {
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

  // allOf: its members (and the keywords beside it) merged into one schema; properties of
  // the same name merge recursively, required lists unite, any other keyword must agree.
  result<gexpr> all_of(const ojson& s, const std::string& path) {
    const ojson& list = s["allOf"];
    if (!list.is_array() || list.empty()) return invalid("'allOf' must be a non-empty array", path);
    ojson merged = ojson::object();
    ojson own = s;
    own.erase("allOf");
    std::vector<std::pair<const ojson*, std::string>> members{{&own, path}};
    for (std::size_t i = 0; i < list.size(); ++i) members.push_back({&list[i], path + "/allOf/" + std::to_string(i)});
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
    }
    return schema(merged, path);
  }

  result<void> merge_into(ojson& merged, const ojson& m, const std::string& path) {
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

  result<gexpr> enum_values(const ojson& s, const std::string& path) {
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

  // --- scalars ------------------------------------------------------------------------

  result<std::optional<std::uint32_t>> count_keyword(const ojson& s, const char* key, const std::string& path) {
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

  static constexpr std::uint32_t json_text_max_count = 10000;

  result<gexpr> string_schema(const ojson& s, const std::string& path) {
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

  // JSON Schema patterns search (ECMA-262): an unanchored side may have any text around it.
  result<gexpr> pattern_string(std::string pattern, const std::string& path) {
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

  result<std::optional<json_text::number_bound>> bound(const ojson& s, const char* key, const char* excl_key,
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

  result<gexpr> integer_schema(const ojson& s, const std::string& path) {
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

  result<gexpr> number_schema(const ojson& s, const std::string& path) {
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

  // --- objects and arrays -------------------------------------------------------------

  result<gexpr> object_schema(const ojson& s, const std::string& path);
  result<gexpr> array_schema(const ojson& s, const std::string& path);

  /// `e` as a named rule, so that repeating it copies one reference.
  std::uint32_t as_rule(gexpr e, const std::string& name) {
    const std::uint32_t id = b_.declare(name);
    b_.define(id, std::move(e));
    return id;
  }

  result<std::uint32_t> sub_schema_rule(const ojson& s, const std::string& path) {
    auto e = schema(s, path);
    if (!e) return std::unexpected(e.error());
    if (e->kind == gexpr_kind::ref) return e->rule_id;
    return as_rule(std::move(*e), "schema:" + show(path));
  }

  // --- any JSON value -----------------------------------------------------------------

  std::uint32_t any_value();
  std::uint32_t string_rule();
  std::uint32_t number_rule();

  const ojson& root_;
  grammar_builder b_;
  std::map<std::string, std::uint32_t> ref_rules_;
  std::optional<std::uint32_t> any_value_;
  std::optional<std::uint32_t> string_;
  std::optional<std::uint32_t> number_;
  int depth_ = 0;
};

std::uint32_t schema_compiler::string_rule() {
  if (!string_) string_ = as_rule(json_text::string_of_length(0, std::nullopt), "json_string");
  return *string_;
}

std::uint32_t schema_compiler::number_rule() {
  if (!number_) number_ = as_rule(json_text::number(), "json_number");
  return *number_;
}

//   value  ::= object | array | string | number | "true" | "false" | "null"
//   object ::= "{" ( string ":" sp value ( "," sp string ":" sp value )* )? "}"
//   array  ::= "[" ( value ( "," sp value )* )? "]"
std::uint32_t schema_compiler::any_value() {
  if (any_value_) return *any_value_;
  const std::uint32_t value = b_.declare("json_value");
  any_value_ = value;
  auto sp = json_text::separator_space;
  gexpr member = g_seq({g_ref(string_rule()), g_byte(':'), sp(), g_ref(value)});
  gexpr members = g_seq({member, g_star(g_seq({g_byte(','), sp(), member}))});
  const std::uint32_t object = as_rule(g_seq({g_byte('{'), g_optional(members), g_byte('}')}), "json_object");
  gexpr elements = g_seq({g_ref(value), g_star(g_seq({g_byte(','), sp(), g_ref(value)}))});
  const std::uint32_t array = as_rule(g_seq({g_byte('['), g_optional(elements), g_byte(']')}), "json_array");
  b_.define(value, g_alt({g_ref(object), g_ref(array), g_ref(string_rule()), g_ref(number_rule()), g_literal("true"),
                          g_literal("false"), g_literal("null")}));
  return value;
}

// Properties come in the order of `properties`; optional ones may be left out. With
//   F_i: members from i on, none written yet;  A_i: members from i on, after a member,
//   F_i ::= kv_i A_i+1 | F_i+1 (optional i)     A_i ::= "," sp kv_i A_i+1 | A_i+1 (optional i)
// the commas come out right whichever optional members are present.
result<gexpr> schema_compiler::object_schema(const ojson& s, const std::string& path) {
  static const ojson no_properties = ojson::object();
  const ojson& props = s.contains("properties") ? s["properties"] : no_properties;
  if (!props.is_object()) return invalid("'properties' must be an object", path + "/properties");
  std::vector<std::string> names;
  for (const auto& [name, sub] : props.items()) names.push_back(name);
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return invalid("'required' must be an array of strings", path + "/required");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) return invalid("'required' must be an array of strings", path + "/required");
      required.insert(r.get<std::string>());
      if (!props.contains(r.get<std::string>())) names.push_back(r.get<std::string>());
    }
  }
  // additionalProperties: false -> none; true -> any value; a schema -> that schema;
  // absent -> none when `properties` declares some (strict, as structured-output APIs
  // expect), any when it declares none (`{"type": "object"}` is any object).
  std::optional<std::uint32_t> extra_value;
  if (!s.contains("additionalProperties")) {
    if (props.empty()) extra_value = any_value();
  } else {
    const ojson& ap = s["additionalProperties"];
    if (ap.is_boolean()) {
      if (ap.get<bool>()) extra_value = any_value();
    } else {
      auto r = sub_schema_rule(ap, path + "/additionalProperties");
      if (!r) return std::unexpected(r.error());
      extra_value = *r;
    }
  }
  auto sp = json_text::separator_space;
  std::vector<gexpr> kv;
  for (const auto& name : names) {
    std::uint32_t value_rule = 0;
    if (props.contains(name)) {
      auto r = sub_schema_rule(props[name], path + "/properties/" + pointer_token(name));
      if (!r) return std::unexpected(r.error());
      value_rule = *r;
    } else {
      value_rule = extra_value.value_or(any_value());
    }
    kv.push_back(g_seq({g_literal(ojson(name).dump()), g_byte(':'), sp(), g_ref(value_rule)}));
  }
  const std::size_t n = names.size();
  std::vector<std::uint32_t> first(n + 1), after(n + 1);
  const std::string base = "object:" + show(path);
  for (std::size_t i = 0; i <= n; ++i) {
    first[i] = b_.declare(base + "#F" + std::to_string(i));
    after[i] = b_.declare(base + "#A" + std::to_string(i));
  }
  if (extra_value) {
    // Additional names differ from the declared ones: a repeated name would let a parser
    // that keeps the last value see one the schema never allowed.
    gexpr extra_kv = g_seq({json_text::string_not_in(names), g_byte(':'), sp(), g_ref(*extra_value)});
    gexpr more = g_star(g_seq({g_byte(','), sp(), extra_kv}));
    b_.define(after[n], more);
    b_.define(first[n], g_optional(g_seq({extra_kv, more})));
  } else {
    b_.define(after[n], g_seq({}));
    b_.define(first[n], g_seq({}));
  }
  for (std::size_t i = n; i-- > 0;) {
    const bool is_required = required.contains(names[i]);
    gexpr with_after = g_seq({g_byte(','), sp(), kv[i], g_ref(after[i + 1])});
    gexpr with_first = g_seq({kv[i], g_ref(after[i + 1])});
    b_.define(after[i], is_required ? std::move(with_after) : g_alt({std::move(with_after), g_ref(after[i + 1])}));
    b_.define(first[i], is_required ? std::move(with_first) : g_alt({std::move(with_first), g_ref(first[i + 1])}));
  }
  return g_seq({g_byte('{'), g_ref(first[0]), g_byte('}')});
}

result<gexpr> schema_compiler::array_schema(const ojson& s, const std::string& path) {
  // prefixItems (2020-12) or items as an array (older drafts) fix the first elements;
  // items (or additionalItems beside an items array) constrains the rest.
  const ojson* prefix = nullptr;
  std::string prefix_path;
  const ojson* rest = nullptr;
  std::string rest_path;
  if (s.contains("prefixItems")) {
    prefix = &s["prefixItems"];
    prefix_path = path + "/prefixItems";
    if (s.contains("additionalItems")) return unsupported("'additionalItems' beside 'prefixItems'", path);
    if (s.contains("items")) {
      rest = &s["items"];
      rest_path = path + "/items";
    }
  } else if (s.contains("items") && s["items"].is_array()) {
    prefix = &s["items"];
    prefix_path = path + "/items";
    if (s.contains("additionalItems")) {
      rest = &s["additionalItems"];
      rest_path = path + "/additionalItems";
    }
  } else if (s.contains("items")) {
    rest = &s["items"];
    rest_path = path + "/items";
    if (s.contains("additionalItems")) return unsupported("'additionalItems' without an 'items' array", path);
  }
  if (prefix && !prefix->is_array()) return invalid("'prefixItems' must be an array", prefix_path);

  auto min_items = count_keyword(s, "minItems", path);
  if (!min_items) return std::unexpected(min_items.error());
  auto max_items = count_keyword(s, "maxItems", path);
  if (!max_items) return std::unexpected(max_items.error());
  const std::uint32_t lo = min_items->value_or(0);
  std::optional<std::uint32_t> hi = *max_items;

  std::vector<std::uint32_t> prefix_rules;
  if (prefix) {
    for (std::size_t i = 0; i < prefix->size(); ++i) {
      auto r = sub_schema_rule((*prefix)[i], prefix_path + "/" + std::to_string(i));
      if (!r) return std::unexpected(r.error());
      prefix_rules.push_back(*r);
    }
  }
  std::optional<std::uint32_t> rest_rule;
  if (!rest) {
    rest_rule = any_value();
  } else if (!(rest->is_boolean() && !rest->get<bool>())) {
    auto r = sub_schema_rule(*rest, rest_path);
    if (!r) return std::unexpected(r.error());
    rest_rule = *r;
  }
  std::uint32_t k = static_cast<std::uint32_t>(prefix_rules.size());
  if (hi) k = std::min(k, *hi);
  if (!rest_rule) hi = hi ? std::min(*hi, k) : k;
  if (hi && *hi < lo) return invalid("no array length satisfies minItems, maxItems and the items", path);

  auto sp = json_text::separator_space;
  // Elements after the k prefix ones.
  gexpr tail;
  if (!rest_rule || (hi && *hi == k)) {
    tail = g_seq({});
  } else {
    gexpr next = g_seq({g_byte(','), sp(), g_ref(*rest_rule)});
    const std::uint32_t more_lo = lo > k ? lo - k : 0;
    std::optional<std::uint32_t> more_hi;
    if (hi) more_hi = *hi - k;
    if (k > 0) {
      tail = g_repeat(std::move(next), more_lo, more_hi);
    } else {
      std::optional<std::uint32_t> after_first;
      if (more_hi) after_first = *more_hi - 1;
      gexpr body = g_seq({g_ref(*rest_rule), g_repeat(std::move(next), more_lo > 0 ? more_lo - 1 : 0, after_first)});
      tail = more_lo == 0 ? g_optional(std::move(body)) : std::move(body);
    }
  }
  // Prefix elements, innermost first: element i is optional once lo elements are written.
  gexpr elements = std::move(tail);
  for (std::uint32_t i = k; i-- > 0;) {
    std::vector<gexpr> part;
    if (i > 0) {
      part.push_back(g_byte(','));
      part.push_back(sp());
    }
    part.push_back(g_ref(prefix_rules[i]));
    part.push_back(std::move(elements));
    gexpr seq = g_seq(std::move(part));
    elements = i >= lo ? g_optional(std::move(seq)) : std::move(seq);
  }
  return g_seq({g_byte('['), std::move(elements), g_byte(']')});
}

}  // namespace

result<grammar> grammar_from_json_schema(std::string_view schema_text) {
  ojson schema = ojson::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return make_error(errc::invalid_argument, "the JSON Schema is not valid JSON");
  return schema_compiler(schema).compile();
}

}  // namespace inflight
