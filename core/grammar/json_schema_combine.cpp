// JSON Schema references and combinators: $ref (with keywords beside it), allOf, anyOf,
// oneOf, enum and const (see json_schema_compiler.hpp).
// Several are compiled by merging schemas into one (merge_members): a value valid against
// the merge is valid against every member.
#include <algorithm>
#include <cctype>
#include <deque>

#include "core/grammar/earley.hpp"
#include "core/grammar/json_schema_compiler.hpp"

namespace inflight::json_schema_detail {

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
      if (token[k] == '%' && k + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[k + 1])) &&
          std::isxdigit(static_cast<unsigned char>(token[k + 2]))) {  // a URI fragment's %-escape
        key += static_cast<char>(std::stoi(token.substr(k + 1, 2), nullptr, 16));
        k += 2;
      } else if (token[k] == '~' && k + 1 < token.size()) {
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

// A $ref with validating keywords beside it: both apply (2019-09 and later; in older
// drafts the keywords were ignored, so the merge is a subset there too).
result<gexpr> schema_compiler::ref(const ojson& s, const std::string& path) {
  if (!s["$ref"].is_string()) return invalid("'$ref' must be a string", path + "/$ref");
  const std::string target = s["$ref"].get<std::string>();
  if (has_validating_siblings(s, "$ref")) {
    const ojson only_ref = {{"$ref", target}};
    ojson rest = s;
    rest.erase("$ref");
    auto merged = merge_members({{&only_ref, path}, {&rest, path}});
    if (!merged) return std::unexpected(merged.error());
    return schema(*merged, path);
  }
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

// anyOf / oneOf with validating keywords beside it: each member merged with them; a member
// that cannot be merged is left out (a subset), and so is one that admits no value.
// oneOf: a member that only lists required names is made exclusive, each other member
// leaving out one of its names (a subset); members of other shapes may still overlap.
result<gexpr> schema_compiler::any_of(const ojson& s, const std::string& path) {
  const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
  const ojson& list = s[key];
  if (!list.is_array() || list.empty()) return invalid(std::string("'") + key + "' must be a non-empty array", path);
  std::vector<std::optional<std::vector<std::string>>> required_lists;
  bool has_required_only = false;
  for (const auto& m : list) {
    required_lists.push_back(std::string(key) == "oneOf" ? required_only(m) : std::nullopt);
    has_required_only = has_required_only || required_lists.back();
  }
  const bool is_merged = has_validating_siblings(s, key) || has_required_only;
  ojson base = s;
  base.erase(key);
  std::vector<gexpr> alts;
  std::optional<error> first_error;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string member_path = path + "/" + key + "/" + std::to_string(i);
    if (!is_merged) {
      auto e = schema(list[i], member_path);
      if (!e) return e;
      alts.push_back(std::move(*e));
      continue;
    }
    ojson others = ojson::object();  // not any other required-only member
    for (std::size_t j = 0; j < list.size(); ++j) {
      if (j == i || !required_lists[j]) continue;
      ojson n = {{"not", {{"required", *required_lists[j]}}}};
      if (auto ok = merge_into(others, n, member_path); !ok) return std::unexpected(ok.error());
    }
    auto merged = merge_members({{&base, path}, {&list[i], member_path}, {&others, member_path}});
    const auto saved_refs = ref_rules_;  // a member left out must leave no reference behind
    auto e = merged ? schema(*merged, member_path) : result<gexpr>(std::unexpected(merged.error()));
    if (!e) ref_rules_ = saved_refs;
    if (e) alts.push_back(std::move(*e));
    else if (!first_error) first_error = e.error();
    if (!e && e.error().code != errc::invalid_argument && merged) return e;
  }
  if (alts.empty()) return std::unexpected(*first_error);
  return g_alt(std::move(alts));
}

result<gexpr> schema_compiler::all_of(const ojson& s, const std::string& path) {
  const ojson& list = s["allOf"];
  if (!list.is_array() || list.empty()) return invalid("'allOf' must be a non-empty array", path);
  ojson own = s;
  own.erase("allOf");
  member_list members{{&own, path}};
  for (std::size_t i = 0; i < list.size(); ++i) members.push_back({&list[i], path + "/allOf/" + std::to_string(i)});
  auto merged = merge_members(members);
  if (!merged) return std::unexpected(merged.error());
  return schema(*merged, path);
}

result<ojson> schema_compiler::merge_members(const member_list& members) {
  ojson merged = ojson::object();
  member_list objects;  // the members, $refs followed
  std::deque<ojson> resolved;  // members whose if/then/else became plain keywords
  for (auto [member, member_path] : members) {
    const ojson* m = member;
    while (m->is_object() && m->contains("$ref") && (*m)["$ref"].is_string() && !has_validating_siblings(*m, "$ref")) {
      auto r = resolve((*m)["$ref"].get<std::string>(), member_path);
      if (!r) return std::unexpected(r.error());
      m = *r;
    }
    if (m->is_object() && m->contains("if") && merged.contains("if")) {
      auto plain = without_conditional(*m, member_path);
      if (!plain) return std::unexpected(plain.error());
      m = &resolved.emplace_back(std::move(*plain));
    }
    if (m->is_boolean()) {
      if (m->get<bool>()) continue;
      return invalid("the schema 'false' admits no value", member_path);
    }
    if (!m->is_object()) return invalid("a schema must be an object or a boolean", member_path);
    if (auto ok = check_keywords(*m, member_path); !ok) return std::unexpected(ok.error());
    if (auto ok = merge_into(merged, *m, member_path); !ok) return std::unexpected(ok.error());
    objects.push_back({m, member_path});
  }
  if (auto ok = apply_member_additional_properties(merged, objects); !ok) return std::unexpected(ok.error());
  return merged;
}
// A member's additionalProperties speaks of every name outside that member's own
// properties, including names other members declare: false forbids them (a required one
// makes the schema admit no value), a schema applies to them as well.
// The same holds for the patterns of patternProperties that the member does not declare.
result<void> schema_compiler::apply_member_additional_properties(ojson& merged, const member_list& members) {
  for (const auto& [m, member_path] : members) {
    if (!m->contains("additionalProperties") || (*m)["additionalProperties"] == true) continue;
    const ojson& extra = (*m)["additionalProperties"];
    if (merged.contains("patternProperties") && merged["patternProperties"].is_object()) {
      const ojson* own = m->contains("patternProperties") ? &(*m)["patternProperties"] : nullptr;
      ojson kept = ojson::object();
      for (auto& [pattern, sub] : merged["patternProperties"].items()) {
        if (own && own->is_object() && own->contains(pattern)) kept[pattern] = sub;
        else if (extra != false) kept[pattern] = ojson{{"allOf", ojson::array({sub, extra})}};
      }
      merged["patternProperties"] = std::move(kept);
    }
    if (!merged.contains("properties") || !merged["properties"].is_object()) continue;
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


namespace {

ojson type_list(const ojson& t) { return t.is_array() ? t : ojson::array({t}); }

// The types both `a` and `b` allow ("integer" is a "number").
ojson intersect_types(const ojson& a, const ojson& b) {
  ojson out = ojson::array();
  for (const auto& x : type_list(a)) {
    for (const auto& y : type_list(b)) {
      if (x == y || (x == "integer" && y == "number")) out.push_back(x);
      else if (x == "number" && y == "integer") out.push_back(y);
    }
  }
  return out;
}

bool is_schema_valued(const std::string& key) {
  static const std::set<std::string> k{"items", "additionalItems", "additionalProperties", "propertyNames"};
  return k.contains(key);
}

}  // namespace

// Keywords both members hold: properties merge by name, required lists unite, types
// intersect, bounds take the stricter, sub-schemas and anyOf/oneOf lists combine; any other
// keyword must be equal.
result<void> schema_compiler::merge_into(ojson& merged, const ojson& m, const std::string& path) {
  static const std::set<std::string> lower{"minLength", "minItems", "minProperties", "minimum"};
  static const std::set<std::string> upper{"maxLength", "maxItems", "maxProperties", "maximum"};
  for (const auto& [key, value] : m.items()) {
    if (is_ignored_keyword(key) || key == "$defs" || key == "definitions") continue;
    if (!merged.contains(key)) {
      merged[key] = value;
      continue;
    }
    ojson& cur = merged[key];
    if (cur == value) {
      continue;
    } else if (key == "properties" || key == "patternProperties" || key == "dependentRequired") {
      if (!value.is_object() || !cur.is_object()) return invalid("'" + key + "' must be an object", path);
      for (const auto& [name, sub] : value.items()) {
        if (!cur.contains(name)) cur[name] = sub;
        else if (key == "dependentRequired") for (const auto& x : sub) cur[name].push_back(x);
        else cur[name] = ojson{{"allOf", ojson::array({cur[name], sub})}};
      }
    } else if (key == "required") {
      if (!value.is_array() || !cur.is_array()) return invalid("'required' must be an array of strings", path);
      for (const auto& name : value)
        if (std::find(cur.begin(), cur.end(), name) == cur.end()) cur.push_back(name);
    } else if (key == "type") {
      ojson both = intersect_types(cur, value);
      if (both.empty()) return invalid("allOf members with no 'type' in common admit no value", path);
      cur = both.size() == 1 ? both[0] : both;
    } else if ((lower.contains(key) || upper.contains(key)) && cur.is_number() && value.is_number()) {
      const bool take = lower.contains(key) ? value.get<double>() > cur.get<double>() : value.get<double>() < cur.get<double>();
      if (take) cur = value;
    } else if (key == "additionalProperties" && (value == false || cur == false)) {
      cur = false;
    } else if (is_schema_valued(key) && (value.is_object() || value.is_boolean()) && (cur.is_object() || cur.is_boolean())) {
      cur = ojson{{"allOf", ojson::array({cur, value})}};
    } else if (key == "enum" && value.is_array() && cur.is_array()) {
      ojson both = ojson::array();
      for (const auto& v : cur)
        if (std::find(value.begin(), value.end(), v) != value.end()) both.push_back(v);
      if (both.empty()) return invalid("allOf members with no 'enum' value in common admit no value", path);
      cur = std::move(both);
    } else if (key == "not") {
      cur = ojson{{"anyOf", ojson::array({cur, value})}};  // not a and not b: not (a or b)
    } else if (key == "allOf") {
      if (!value.is_array() || !cur.is_array()) return invalid("'allOf' must be a non-empty array", path);
      for (const auto& sub : value) cur.push_back(sub);
    } else if ((key == "anyOf" || key == "oneOf") && value.is_array() && cur.is_array() &&
               value.size() * cur.size() <= 64) {
      ojson product = ojson::array();
      for (const auto& a : cur)
        for (const auto& b : value) product.push_back(ojson{{"allOf", ojson::array({a, b})}});
      cur = std::move(product);
    } else {
      return unsupported("allOf members that disagree on '" + key + "' cannot be merged", path);
    }
  }
  return {};
}

// enum / const: the values valid against the keywords beside them (a value the compiled
// language of those keywords does not hold is left out).
result<gexpr> schema_compiler::enum_values(const ojson& s, const std::string& path) {
  ojson values;
  if (s.contains("enum")) {
    if (!s["enum"].is_array() || s["enum"].empty()) return invalid("'enum' must be a non-empty array", path + "/enum");
    values = s["enum"];
  }
  if (s.contains("const")) {
    if (s.contains("enum") && std::find(values.begin(), values.end(), s["const"]) == values.end())
      return invalid("'const' is not among the values of 'enum'", path);
    values = ojson::array({s["const"]});
  }
  ojson rest = s;
  rest.erase("enum");
  rest.erase("const");
  const bool has_rest = has_validating_siblings(rest, "");
  std::vector<gexpr> alts;
  for (const auto& v : values) {
    bool fits = true;
    if (s.contains("type")) {
      auto types = types_of(s, path);
      if (!types) return std::unexpected(types.error());
      fits = std::any_of(types->begin(), types->end(), [&](auto& t) { return type_matches(v, t); });
    }
    if (fits && has_rest) {
      auto ok = is_valid_value(rest, v, path);
      if (!ok) return std::unexpected(ok.error());
      fits = *ok;
    }
    if (fits) alts.push_back(g_literal(v.dump()));
  }
  const char* key = s.contains("const") ? "const" : "enum";
  if (alts.empty()) return invalid(std::string("no value of '") + key + "' is valid against the keywords beside it", path);
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(alts);
  return e;
}

result<bool> schema_compiler::is_valid_value(const ojson& s, const ojson& value, const std::string& path) {
  schema_compiler sub(root_, options_);
  const std::uint32_t root = sub.b_.declare("root");
  auto e = sub.schema(s, path);
  if (!e) return e.error().code == errc::invalid_argument ? result<bool>(false) : std::unexpected(e.error());
  sub.b_.define(root, std::move(*e));
  auto g = sub.b_.build(root);
  if (!g) return false;  // admits no value
  earley_parser parser(*g);
  parser.start_at_root();
  const std::string text = value.dump();
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(text.data());
  return parser.try_advance_all({bytes, text.size()}) && parser.can_finish();
}

}  // namespace inflight::json_schema_detail
