#include "actors/gateway/tool_request.hpp"

#include <cctype>

#include "actors/gateway/constraint_request.hpp"
#include "actors/gateway/json_fields.hpp"

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

bool is_valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

api_result<tool_function> parse_tool(const json& t, const ojson& ot, const std::string& path) {
  if (!t.is_object()) return std::unexpected(bad_request(path + " must be an object", path));
  if (!t.contains("type") || t["type"] != "function")
    return std::unexpected(bad_request(path + ".type must be \"function\"", path + ".type"));
  const json* fn = field(t, "function");
  const std::string fpath = path + ".function";
  if (!fn || !fn->is_object()) return std::unexpected(bad_request(fpath + " must be an object", fpath));
  tool_function out;
  const json* name = field(*fn, "name");
  if (!name || !name->is_string() || !is_valid_name(name->get<std::string>())) {
    return std::unexpected(bad_request(
        fpath + ".name must be 1 to 64 letters, digits, underscores or dashes", fpath + ".name"));
  }
  out.name = name->get<std::string>();
  if (auto e = read_string(*fn, "description", out.description)) {
    return std::unexpected(bad_request(fpath + ".description must be a string", fpath + ".description"));
  }
  if (const json* p = field(*fn, "parameters")) {
    if (!p->is_object()) return std::unexpected(bad_request(fpath + ".parameters must be a JSON Schema object",
                                                            fpath + ".parameters"));
    out.parameters = with_order(*p, ordered_child(ordered_child(ot, "function"), "parameters"));
  }
  if (const json* strict = field(*fn, "strict"); strict && !strict->is_boolean())
    return std::unexpected(bad_request(fpath + ".strict must be a boolean", fpath + ".strict"));
  return out;
}

opt_error parse_tool_choice(const json& body, tool_request& r) {
  const json* c = field(body, "tool_choice");
  if (!c) return {};
  const auto shape = [] {
    return bad_request(
        "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
        "tool_choice");
  };
  if (c->is_string()) {
    const auto& s = c->get_ref<const std::string&>();
    if (s == "none") r.mode = tool_choice_mode::none;
    else if (s == "auto") r.mode = tool_choice_mode::automatic;
    else if (s == "required") r.mode = tool_choice_mode::required;
    else return shape();
  } else if (c->is_object() && c->value("type", json()) == "function" && c->contains("function") &&
             (*c)["function"].is_object() && (*c)["function"].value("name", json()).is_string()) {
    r.mode = tool_choice_mode::named;
    r.forced_name = (*c)["function"]["name"].get<std::string>();
  } else {
    return shape();
  }
  if (r.is_forced() && r.functions.empty())
    return bad_request("tool_choice \"" + std::string(r.mode == tool_choice_mode::named ? r.forced_name : "required") +
                           "\" needs tools", "tool_choice");
  if (r.mode == tool_choice_mode::named) {
    for (const auto& f : r.functions)
      if (f.name == r.forced_name) return {};
    return bad_request("tool_choice names the function '" + r.forced_name + "', which is not in tools", "tool_choice");
  }
  return {};
}

}  // namespace

api_result<tool_request> try_parse_tools(const json& body, const ojson& ordered) {
  tool_request r;
  if (const json* tools = field(body, "tools")) {
    if (!tools->is_array()) return std::unexpected(bad_request("tools must be a list of functions", "tools"));
    for (std::size_t i = 0; i < tools->size(); ++i) {
      auto t = parse_tool((*tools)[i], ordered_child(ordered_child(ordered, "tools"), i), "tools[" + std::to_string(i) + "]");
      if (!t) return std::unexpected(t.error());
      for (const auto& f : r.functions)
        if (f.name == t->name)
          return std::unexpected(bad_request("tools name the function '" + t->name + "' twice",
                                             "tools[" + std::to_string(i) + "].function.name"));
      r.functions.push_back(std::move(*t));
    }
    if (!r.functions.empty()) r.definitions = with_order(*tools, ordered_child(ordered, "tools"));
  }
  if (auto e = parse_tool_choice(body, r)) return std::unexpected(*e);
  if (auto e = read_bool(body, "parallel_tool_calls", r.is_parallel)) return std::unexpected(*e);
  return r;
}

grammar_spec forced_tool_grammar(const tool_request& tools, const served_model& m) {
  std::vector<tool_function> allowed;
  for (const auto& f : tools.functions)
    if (tools.mode != tool_choice_mode::named || f.name == tools.forced_name) allowed.push_back(f);
  const bool is_parallel = tools.mode == tool_choice_mode::required && tools.is_parallel;
  return tool_call_grammar(m.tool_style.format, allowed, is_parallel);
}

api_result<std::shared_ptr<const token_index>> try_compile_tool_grammar(const tool_request& tools,
                                                                        const served_model& m) {
  auto index = try_compile_constraint(m, {forced_tool_grammar(tools, m), "tools"});
  if (index) return index;
  for (std::size_t i = 0; i < tools.functions.size(); ++i) {
    const auto& parameters = tools.functions[i].parameters;
    if (parameters.is_null()) continue;
    auto alone = try_compile({grammar_kind::json_schema, parameters.dump()});
    if (alone) continue;
    const std::string param = "tools[" + std::to_string(i) + "].function.parameters";
    return std::unexpected(bad_request(param + ": " + alone.error().message, param, "invalid_grammar"));
  }
  return index;
}

}  // namespace inflight::gateway
