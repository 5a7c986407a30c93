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

}  // namespace inflight::json_schema_detail
