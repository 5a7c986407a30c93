// JSON Schema objects, arrays and any JSON value (see json_schema_compiler.hpp).
#include <algorithm>

#include "core/grammar/json_schema_compiler.hpp"

namespace inflight::json_schema_detail {

std::uint32_t schema_compiler::as_rule(gexpr e, const std::string& name) {
  const std::uint32_t id = b_.declare(name);
  b_.define(id, std::move(e));
  return id;
}

result<std::uint32_t> schema_compiler::sub_schema_rule(const ojson& s, const std::string& path) {
  auto e = schema(s, path);
  if (!e) return std::unexpected(e.error());
  if (e->kind == gexpr_kind::ref) return e->rule_id;
  return as_rule(std::move(*e), "schema:" + show(path));
}

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

namespace {

const ojson& member_or_empty(const ojson& s, const char* key) {
  static const ojson empty = ojson::object();
  return s.contains(key) ? s[key] : empty;
}

}  // namespace

// dependentRequired: a name that may be written makes its dependents required (a subset:
// they are written whether or not it is); a name that may only come as an additional
// property is never written (`excluded`).
result<void> schema_compiler::dependent_required(const ojson& s, const std::string& path, std::vector<std::string>& names,
                                                 std::set<std::string>& required, std::set<std::string>& excluded) {
  const ojson& deps = member_or_empty(s, "dependentRequired");
  if (!deps.is_object()) return invalid("'dependentRequired' must be an object", path + "/dependentRequired");
  for (bool is_changed = true; is_changed;) {
    is_changed = false;
    for (const auto& [name, list] : deps.items()) {
      if (!list.is_array()) return invalid("'dependentRequired' must map names to arrays", path + "/dependentRequired");
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        excluded.insert(name);
        continue;
      }
      for (const auto& x : list) {
        if (!x.is_string()) return invalid("'dependentRequired' must map names to arrays of strings", path);
        const std::string dep = x.get<std::string>();
        if (!required.insert(dep).second) continue;
        is_changed = true;
        if (std::find(names.begin(), names.end(), dep) == names.end()) names.push_back(dep);
      }
    }
  }
  return {};
}

// Whether property name `name` may match pattern `pattern` (true when the pattern cannot
// be compiled: the caller then applies its schema, which is stricter).
result<bool> schema_compiler::may_match(const std::string& pattern, const std::string& name, const std::string& path) {
  const ojson s = {{"type", "string"}, {"pattern", pattern}};
  auto ok = is_valid_value(s, ojson(name), path);
  return ok ? *ok : true;
}

// The rule of the value of a member that all of `schemas` apply to.
result<std::uint32_t> schema_compiler::value_rule(const std::vector<const ojson*>& schemas, const std::string& path) {
  if (schemas.empty()) return any_value();
  if (schemas.size() == 1) return sub_schema_rule(*schemas[0], path);
  ojson all = {{"allOf", ojson::array()}};
  for (const ojson* x : schemas) all["allOf"].push_back(*x);
  return sub_schema_rule(all, path);
}

// The rule of values valid against every member: the one member's own rule (so that a
// $ref stays a reference), or their merge; nullopt when they cannot be merged.
result<std::optional<std::uint32_t>> schema_compiler::merged_rule(const member_list& members, const std::string& path) {
  if (members.size() == 1) {
    auto r = sub_schema_rule(*members[0].first, members[0].second);
    if (!r) return std::unexpected(r.error());
    return std::optional<std::uint32_t>{*r};
  }
  auto merged = merge_members(members);
  if (!merged) return std::optional<std::uint32_t>{};
  auto r = sub_schema_rule(*merged, path);
  if (!r) return std::unexpected(r.error());
  return std::optional<std::uint32_t>{*r};
}

// Properties come in the order of `properties`; optional ones may be left out; then the
// other members: names of patternProperties, then additional names (see member_list_expr).
result<gexpr> schema_compiler::object_schema(const ojson& s, const std::string& path) {
  const ojson& props = member_or_empty(s, "properties");
  const ojson& patterns = member_or_empty(s, "patternProperties");
  if (!props.is_object()) return invalid("'properties' must be an object", path + "/properties");
  if (!patterns.is_object()) return invalid("'patternProperties' must be an object", path + "/patternProperties");
  std::vector<std::string> names;
  for (const auto& [name, sub] : props.items()) names.push_back(name);
  std::set<std::string> required, excluded;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return invalid("'required' must be an array of strings", path + "/required");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) return invalid("'required' must be an array of strings", path + "/required");
      required.insert(r.get<std::string>());
      if (!props.contains(r.get<std::string>())) names.push_back(r.get<std::string>());
    }
  }
  if (auto ok = dependent_required(s, path, names, required, excluded); !ok) return std::unexpected(ok.error());
  // additionalProperties: false -> none; true -> any value; a schema -> that schema;
  // absent -> none when `properties` or `patternProperties` declare some (strict, as
  // structured-output APIs expect), any when they declare none (`{"type": "object"}`).
  static const ojson any = true;
  const ojson* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : &any;
  if (!s.contains("additionalProperties") && (!props.empty() || !patterns.empty())) extra = nullptr;
  if (extra && *extra == false) extra = nullptr;
  std::vector<gexpr> kv;
  std::vector<bool> is_required;
  auto sp = json_text::separator_space;
  for (const auto& name : names) {
    const std::string member_path = path + "/properties/" + pointer_token(name);
    std::vector<const ojson*> schemas;
    if (props.contains(name)) schemas.push_back(&props[name]);
    for (const auto& [pattern, sub] : patterns.items()) {
      auto m = may_match(pattern, name, path);
      if (!m) return std::unexpected(m.error());
      if (*m) schemas.push_back(&sub);
    }
    // A required name outside properties and patterns takes any value unless
    // additionalProperties says otherwise.
    const ojson* other = extra ? extra : (!s.contains("additionalProperties") && required.contains(name) ? &any : nullptr);
    bool is_allowed = !schemas.empty() || other;
    if (schemas.empty() && other) schemas.push_back(other);
    if (std::any_of(schemas.begin(), schemas.end(), [](const ojson* x) { return is_false_schema(*x); })) is_allowed = false;
    if (is_allowed && s.contains("propertyNames")) {
      auto ok = is_valid_value(s["propertyNames"], ojson(name), path + "/propertyNames");
      if (!ok) return std::unexpected(ok.error());
      is_allowed = *ok;
    }
    if (!is_allowed && required.contains(name))
      return invalid("required property '" + name + "' is not allowed by the schema, so it admits no value", path);
    if (!is_allowed) continue;
    auto rule = value_rule(schemas, member_path);
    if (!rule) return std::unexpected(rule.error());
    kv.push_back(g_seq({g_literal(ojson(name).dump()), g_byte(':'), sp(), g_ref(*rule)}));
    is_required.push_back(required.contains(name));
  }
  std::vector<std::string> taken = names;
  taken.insert(taken.end(), excluded.begin(), excluded.end());
  auto others = other_members(s, extra, taken, path);
  if (!others) return std::unexpected(others.error());
  auto lo = count_keyword(s, "minProperties", path);
  if (!lo) return std::unexpected(lo.error());
  auto hi = count_keyword(s, "maxProperties", path);
  if (!hi) return std::unexpected(hi.error());
  auto members = member_list_expr(kv, is_required, *others, lo->value_or(0), *hi, "object:" + show(path));
  if (!members) return std::unexpected(members.error());
  return g_seq({g_byte('{'), std::move(*members), g_byte('}')});
}

// Members other than the declared ones, as one alternative: names of each pattern that no
// declared (or excluded) name matches, with values valid against every pattern's schema
// (a name may match several); then additional names, never a taken one, with values valid
// against additionalProperties and every pattern's schema. Kinds whose schemas cannot be
// merged are left out (a subset). Under propertyNames only additional names written from
// it, when no name is taken and there are no patterns.
result<std::optional<gexpr>> schema_compiler::other_members(const ojson& s, const ojson* extra,
                                                            const std::vector<std::string>& taken,
                                                            const std::string& path) {
  const ojson& patterns = member_or_empty(s, "patternProperties");
  auto sp = json_text::separator_space;
  member_list pattern_schemas;
  for (const auto& [pattern, sub] : patterns.items())
    pattern_schemas.push_back({&sub, path + "/patternProperties/" + pointer_token(pattern)});
  std::vector<gexpr> kinds;
  const bool has_names_schema = s.contains("propertyNames");
  for (const auto& [pattern, sub] : patterns.items()) {
    if (has_names_schema) break;
    const std::string pattern_path = path + "/patternProperties/" + pointer_token(pattern);
    bool is_clash = false;
    for (const auto& name : taken) {
      auto m = may_match(pattern, name, path);
      if (!m) return std::unexpected(m.error());
      is_clash = is_clash || *m;
    }
    auto name_expr = pattern_string(pattern, pattern_path);
    if (is_clash || !name_expr || is_false_schema(sub)) continue;
    auto rule = merged_rule(pattern_schemas, pattern_path);
    if (!rule) return std::unexpected(rule.error());
    if (!*rule) continue;
    kinds.push_back(g_seq({std::move(*name_expr), g_byte(':'), sp(), g_ref(**rule)}));
  }
  if (extra) {
    member_list all = pattern_schemas;
    all.push_back({extra, path + "/additionalProperties"});
    std::optional<gexpr> name_expr;
    if (!has_names_schema) {
      name_expr = json_text::string_not_in(taken);
    } else if (taken.empty() && patterns.empty()) {
      static const ojson string_type = {{"type", "string"}};
      auto names = merge_members({{&s["propertyNames"], path + "/propertyNames"}, {&string_type, path}});
      if (names) {
        auto e = schema(*names, path + "/propertyNames");
        if (!e) return std::unexpected(e.error());
        name_expr = std::move(*e);
      }
    }
    if (name_expr) {
      auto rule = merged_rule(all, path + "/additionalProperties");
      if (!rule) return std::unexpected(rule.error());
      if (*rule) kinds.push_back(g_seq({std::move(*name_expr), g_byte(':'), sp(), g_ref(**rule)}));
    }
  }
  if (kinds.empty()) return std::optional<gexpr>{};
  return std::optional<gexpr>{g_alt(std::move(kinds))};
}

// With F_i: members from i on, none written yet, and A_i^c: members from i on, after c
// written (c counts up to maxProperties, or to minProperties where there is no maximum,
// and is always 0 when neither matters):
//   F_i ::= m_i A_{i+1}^1 | F_{i+1} (optional i)     A_i^c ::= "," sp m_i A_{i+1}^{c+1} | A_{i+1}^c (optional i)
// the commas come out right whichever optional members are present; after the last
// declared member come the extra ones, as many as the counts still allow.
result<gexpr> schema_compiler::member_list_expr(const std::vector<gexpr>& members, const std::vector<bool>& is_required,
                                                const std::optional<gexpr>& extra, std::uint32_t lo,
                                                std::optional<std::uint32_t> hi, const std::string& name) {
  const std::size_t n = members.size();
  const auto num_required = static_cast<std::uint32_t>(std::count(is_required.begin(), is_required.end(), true));
  if (hi && *hi < num_required) return invalid("'maxProperties' is below the number of required properties", name);
  if (lo <= num_required) lo = 0;
  if (hi && !extra && *hi >= n) hi.reset();
  if (!extra && lo > n) return invalid("'minProperties' is above the number of properties allowed", name);
  const std::uint32_t cap = hi ? *hi : lo;
  if ((n + 1) * (cap + 1) > 20000)
    return unsupported("'minProperties' or 'maxProperties' of " + std::to_string(cap) + " over " + std::to_string(n) +
                           " properties is not supported",
                       name);
  const auto next = [&](std::uint32_t c) -> std::optional<std::uint32_t> {
    if (hi) return c < *hi ? std::optional<std::uint32_t>(c + 1) : std::nullopt;
    return std::min(c + 1, cap);
  };
  auto sp = json_text::separator_space;
  const gexpr nothing = g_alt({});
  std::vector<std::vector<std::optional<std::uint32_t>>> after(n + 1, std::vector<std::optional<std::uint32_t>>(cap + 1));
  const auto after_rule = [&](std::size_t i, std::uint32_t c) {
    if (!after[i][c]) after[i][c] = b_.declare(name + "#A" + std::to_string(i) + "." + std::to_string(c));
    return *after[i][c];
  };
  // The extra members after c written ones (c == 0: none written yet, no leading comma).
  const auto tail = [&](std::uint32_t c, bool is_first) -> gexpr {
    const std::uint32_t more_lo = lo > c ? lo - c : 0;
    std::optional<std::uint32_t> more_hi;
    if (hi) more_hi = *hi - c;
    if (!extra) return more_lo == 0 ? g_seq({}) : nothing;
    gexpr comma_extra = g_seq({g_byte(','), sp(), *extra});
    if (!is_first) return json_text::counted(b_, comma_extra, more_lo, more_hi, name + "#extra");
    if (more_hi == std::optional<std::uint32_t>(0)) return g_seq({});
    std::optional<std::uint32_t> rest_hi;
    if (more_hi) rest_hi = *more_hi - 1;
    gexpr some = g_seq({*extra, json_text::counted(b_, comma_extra, more_lo > 0 ? more_lo - 1 : 0, rest_hi, name + "#extra")});
    return more_lo == 0 ? g_optional(std::move(some)) : std::move(some);
  };
  for (std::uint32_t c = 0; c <= cap; ++c) b_.define(after_rule(n, c), tail(c, false));
  for (std::size_t i = n; i-- > 0;) {
    for (std::uint32_t c = 0; c <= cap; ++c) {
      std::vector<gexpr> alts;
      if (auto c1 = next(c)) alts.push_back(g_seq({g_byte(','), sp(), members[i], g_ref(after_rule(i + 1, *c1))}));
      if (!is_required[i]) alts.push_back(g_ref(after_rule(i + 1, c)));
      b_.define(after_rule(i, c), alts.empty() ? nothing : g_alt(std::move(alts)));
    }
  }
  gexpr first = tail(0, true);
  for (std::size_t i = n; i-- > 0;) {
    const std::uint32_t id = b_.declare(name + "#F" + std::to_string(i));
    std::vector<gexpr> alts;
    if (auto c1 = next(0)) alts.push_back(g_seq({members[i], g_ref(after_rule(i + 1, *c1))}));
    if (!is_required[i]) alts.push_back(std::move(first));
    b_.define(id, alts.empty() ? nothing : g_alt(std::move(alts)));
    first = g_ref(id);
  }
  return first;
}

}  // namespace inflight::json_schema_detail
