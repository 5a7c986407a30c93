// JSON Schema arrays (see json_schema_compiler.hpp).
#include <algorithm>

#include "core/grammar/json_schema_compiler.hpp"

namespace inflight::json_schema_detail {

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
    // additionalItems without an items array validates nothing
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
  if (s.contains("uniqueItems") && s["uniqueItems"] == true && !(hi && *hi <= 1)) {
    if (!prefix && rest) {
      auto subsequence = unique_values(*rest, lo, hi, rest_path);
      if (!subsequence) return std::unexpected(subsequence.error());
      if (*subsequence) return g_seq({g_byte('['), std::move(**subsequence), g_byte(']')});
    }
    // Arrays of at most one element are unique (a subset).
    if (lo > 1) return unsupported("'uniqueItems' with 'minItems' over 1 is supported only for items from an 'enum'", path);
    hi = 1;
    if (k > 1) k = 1;
  }

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
      tail = json_text::counted(b_, next, more_lo, more_hi, "items:" + show(path));
    } else {
      std::optional<std::uint32_t> after_first;
      if (more_hi) after_first = *more_hi - 1;
      gexpr body = g_seq({g_ref(*rest_rule),
                          json_text::counted(b_, next, more_lo > 0 ? more_lo - 1 : 0, after_first, "items:" + show(path))});
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


// uniqueItems over items that take few values (an enum, a const, booleans): each value at
// most once, in the order the schema lists them (a subset). nullopt for other items.
result<std::optional<gexpr>> schema_compiler::unique_values(const ojson& items, std::uint32_t lo,
                                                            std::optional<std::uint32_t> hi, const std::string& path) {
  const ojson* s = &items;
  while (s->is_object() && s->contains("$ref") && (*s)["$ref"].is_string() && s->size() == 1) {
    auto r = resolve((*s)["$ref"].get<std::string>(), path);
    if (!r) return std::unexpected(r.error());
    s = *r;
  }
  ojson values;
  if (s->is_object() && s->contains("enum") && (*s)["enum"].is_array()) values = (*s)["enum"];
  else if (s->is_object() && s->contains("const")) values = ojson::array({(*s)["const"]});
  else if (s->is_object() && s->contains("type") && (*s)["type"] == "boolean") values = ojson::array({true, false});
  else return std::optional<gexpr>{};
  std::vector<gexpr> members;
  for (const auto& v : values) {
    auto ok = is_valid_value(*s, v, path);
    if (!ok) return std::unexpected(ok.error());
    if (*ok) members.push_back(g_literal(v.dump()));
  }
  auto e = member_list_expr(members, std::vector<bool>(members.size(), false), std::nullopt, lo, hi,
                            "unique:" + show(path));
  if (!e) return std::unexpected(e.error());
  return std::optional<gexpr>{std::move(*e)};
}

}  // namespace inflight::json_schema_detail
