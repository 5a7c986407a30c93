// JSON Schema keywords compiled by rewriting them into others: if/then/else and
// dependentSchemas into merges, `not` into left-out properties and types (see
// json_schema_compiler.hpp). Each rewrite keeps a subset of the schema's language.
#include <algorithm>
#include <set>

#include "core/grammar/json_schema_compiler.hpp"

namespace inflight::json_schema_detail {

// A schema's if/then/else as plain keywords, for merging with another conditional: then
// and else merged in, or else if and then.
result<ojson> schema_compiler::without_conditional(const ojson& s, const std::string& path) {
  ojson base = s;
  for (const char* k : {"if", "then", "else"}) base.erase(k);
  static const ojson yes = true;
  const ojson& then_s = s.contains("then") ? s["then"] : yes;
  const ojson& else_s = s.contains("else") ? s["else"] : yes;
  auto both = merge_members({{&base, path}, {&then_s, path + "/then"}, {&else_s, path + "/else"}});
  if (both) return both;
  return merge_members({{&base, path}, {&s["if"], path + "/if"}, {&then_s, path + "/then"}});
}

// if/then/else: a value valid against both `then` and `else` is valid whichever way `if`
// goes; when they cannot be merged, one valid against `if` and `then` together.
result<gexpr> schema_compiler::conditional(const ojson& s, const std::string& path) {
  ojson base = s;
  for (const char* k : {"if", "then", "else"}) base.erase(k);
  if (!s.contains("if")) return schema(base, path);  // then/else without if do nothing
  static const ojson yes = true;
  const ojson& then_s = s.contains("then") ? s["then"] : yes;
  const ojson& else_s = s.contains("else") ? s["else"] : yes;
  auto both = merge_members({{&base, path}, {&then_s, path + "/then"}, {&else_s, path + "/else"}});
  if (both) {
    const auto saved_refs = ref_rules_;
    auto e = schema(*both, path);
    if (e) return e;
    ref_rules_ = saved_refs;
  }
  auto taken = merge_members({{&base, path}, {&s["if"], path + "/if"}, {&then_s, path + "/then"}});
  if (!taken) return unsupported("'if' with 'then' and 'else' that cannot be merged: " + taken.error().message, path);
  return schema(*taken, path);
}

// dependentSchemas (and `dependencies` with schemas): applied always, a subset that is
// valid whether or not the property is present; when they cannot be applied so, their
// properties are never written (also a subset). `dependencies` with name lists become
// dependentRequired (enforced in objects).
result<gexpr> schema_compiler::dependent_schemas(const ojson& s, const std::string& path) {
  ojson base = s;
  base.erase("dependentSchemas");
  base.erase("dependencies");
  std::vector<std::pair<ojson, std::string>> deps;
  std::vector<std::pair<std::string, std::string>> trigger_names;
  for (const char* key : {"dependencies", "dependentSchemas"}) {
    if (!s.contains(key)) continue;
    if (!s[key].is_object()) return invalid(std::string("'") + key + "' must be an object", path + "/" + key);
    for (const auto& [name, dep] : s[key].items()) {
      if (dep.is_array()) {
        for (const auto& x : dep) base["dependentRequired"][name].push_back(x);
      } else {
        deps.push_back({dep, path + "/" + key + "/" + pointer_token(name)});
        trigger_names.push_back({name, deps.back().second});
      }
    }
  }
  member_list members{{&base, path}};
  for (const auto& [dep, dep_path] : deps) members.push_back({&dep, dep_path});
  auto merged = merge_members(members);
  const auto saved_refs = ref_rules_;
  auto e = merged ? schema(*merged, path) : result<gexpr>(std::unexpected(merged.error()));
  if (e || deps.empty()) return e;
  // The schemas do not merge with the rest: their properties are never written instead.
  ref_rules_ = saved_refs;
  for (const auto& [name, dep_path] : trigger_names) {
    ojson& props = base["properties"];
    props[name] = props.contains(name) ? ojson{{"allOf", ojson::array({props[name], false})}} : ojson(false);
  }
  return schema(base, path);
}

// not, in the forms real schemas use, rewritten into keywords enforced here: not {} admits
// no value; not {"required": names} leaves one of them out (a subset); not anyOf / allOf of
// such lists; not {"type": ...} keeps the other types. Any other `not` is an error.
result<ojson> schema_compiler::without_not(const ojson& s, const std::string& path) {
  const ojson& n = s["not"];
  ojson out = s;
  out.erase("not");
  if (n == true || n == ojson::object()) return invalid("'not' of a schema every value satisfies admits no value", path);
  std::vector<std::vector<std::string>> groups;  // of each group, one name is left out
  const auto list = [&](const char* key) -> const ojson* {
    return n.is_object() && n.contains(key) && n[key].is_array() &&
                   !has_validating_siblings(n, key)
               ? &n[key]
               : nullptr;
  };
  if (auto names = required_only(n)) {
    groups.push_back(*names);
  } else if (const ojson* any = list("anyOf")) {
    for (const auto& m : *any) {
      auto names = required_only(m);
      if (!names) return unsupported("unsupported JSON Schema keyword 'not' (of this anyOf)", path);
      groups.push_back(*names);
    }
  } else if (const ojson* all = list("allOf")) {
    groups.emplace_back();
    for (const auto& m : *all) {
      auto names = required_only(m);
      if (!names) return unsupported("unsupported JSON Schema keyword 'not' (of this allOf)", path);
      groups.back().insert(groups.back().end(), names->begin(), names->end());
    }
  } else if (n.is_object() && n.contains("type") && !has_validating_siblings(n, "type")) {
    static const ojson all_types = {"string", "number", "integer", "boolean", "null", "object", "array"};
    const ojson types = out.contains("type") ? (out["type"].is_array() ? out["type"] : ojson::array({out["type"]})) : all_types;
    const ojson banned = n["type"].is_array() ? n["type"] : ojson::array({n["type"]});
    ojson kept = ojson::array();
    for (const auto& t : types) {
      const bool is_banned = std::find(banned.begin(), banned.end(), t) != banned.end();
      if (t == "number" && std::find(banned.begin(), banned.end(), "integer") != banned.end() && !is_banned)
        return unsupported("unsupported JSON Schema keyword 'not' (non-integral numbers)", path);
      if (!is_banned && !(t == "integer" && std::find(banned.begin(), banned.end(), "number") != banned.end()))
        kept.push_back(t);
    }
    if (kept.empty()) return invalid("'not' leaves no type, so the schema admits no value", path);
    out["type"] = kept.size() == 1 ? kept[0] : kept;
    return out;
  } else {
    return unsupported("unsupported JSON Schema keyword 'not'", path);
  }
  std::set<std::string> required;
  if (out.contains("required") && out["required"].is_array())
    for (const auto& x : out["required"])
      if (x.is_string()) required.insert(x.get<std::string>());
  for (const auto& group : groups) {
    auto it = std::find_if(group.begin(), group.end(), [&](const std::string& x) { return !required.contains(x); });
    if (it == group.end()) return invalid("'not' forbids a required property, so the schema admits no value", path);
    ojson& props = out["properties"];
    props[*it] = props.contains(*it) ? ojson{{"allOf", ojson::array({props[*it], false})}} : ojson(false);
  }
  return out;
}

}  // namespace inflight::json_schema_detail
