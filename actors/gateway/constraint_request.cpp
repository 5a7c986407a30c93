#include "actors/gateway/constraint_request.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

using constraint_result = api_result<std::optional<named_constraint>>;

constexpr const char* any_object_schema = R"({"type":"object"})";

/// A schema given as an object, a boolean, or (vLLM) a string holding one; `ov` is `v` in
/// the client's key order (null: unknown).
api_result<std::string> schema_text(const json& v, const ojson& ov, const std::string& param) {
  if (v.is_object() || v.is_boolean()) return with_order(v, ov).dump();
  if (v.is_string()) {
    const auto parsed = json::parse(v.get<std::string>(), nullptr, false);
    if (!parsed.is_discarded() && (parsed.is_object() || parsed.is_boolean())) return v.get<std::string>();
  }
  return std::unexpected(bad_request(param + " must be a JSON Schema (an object)", param));
}

api_result<std::string> nonempty_string(const json& v, const std::string& param) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty())
    return std::unexpected(bad_request(param + " must be a non-empty string", param));
  return v.get<std::string>();
}

api_result<std::string> choice_list(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) return std::unexpected(bad_request(param + " must be a non-empty list of strings", param));
  for (const auto& c : v)
    if (!c.is_string()) return std::unexpected(bad_request(param + " must be a non-empty list of strings", param));
  return v.dump();
}

constraint_result make(grammar_kind kind, api_result<std::string> text, const std::string& param) {
  if (!text) return std::unexpected(text.error());
  return named_constraint{{kind, std::move(*text)}, param};
}

constraint_result from_response_format(const json& rf, const ojson& orf) {
  const std::string p = "response_format";
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
    return std::unexpected(bad_request(p + " must be an object with a type", p));
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  const json* direct = field(rf, "schema");  // llama.cpp server: the schema beside the type
  const ojson& odirect = ordered_child(orf, "schema");
  if (type == "json_object") {
    return make(grammar_kind::json_schema, direct ? schema_text(*direct, odirect, p + ".schema") : any_object_schema, p);
  }
  if (type != "json_schema") {
    return std::unexpected(
        bad_request(p + ".type must be \"text\", \"json_object\" or \"json_schema\" (got \"" + type + "\")", p + ".type"));
  }
  const json* js = field(rf, "json_schema");
  if (!js) {
    if (direct) return make(grammar_kind::json_schema, schema_text(*direct, odirect, p + ".schema"), p);
    return std::unexpected(bad_request(p + ".json_schema is required when type is \"json_schema\"", p + ".json_schema"));
  }
  if (!js->is_object()) return std::unexpected(bad_request(p + ".json_schema must be an object", p + ".json_schema"));
  if (const json* name = field(*js, "name"); name && !name->is_string())
    return std::unexpected(bad_request(p + ".json_schema.name must be a string", p + ".json_schema.name"));
  if (const json* strict = field(*js, "strict"); strict && !strict->is_boolean())
    return std::unexpected(bad_request(p + ".json_schema.strict must be a boolean", p + ".json_schema.strict"));
  const json* schema = field(*js, "schema");
  const ojson& oschema = ordered_child(ordered_child(orf, "json_schema"), "schema");
  return make(grammar_kind::json_schema, schema ? schema_text(*schema, oschema, p + ".json_schema.schema") : any_object_schema,
              p);
}

constraint_result from_structured_outputs(const json& so, const ojson& oso) {
  const std::string p = "structured_outputs";
  if (!so.is_object()) return std::unexpected(bad_request(p + " must be an object", p));
  for (const char* unsupported : {"structural_tag", "whitespace_pattern"}) {
    if (field(so, unsupported)) {
      return std::unexpected(bad_request(p + "." + unsupported + " is not supported", p + "." + unsupported));
    }
  }
  std::vector<constraint_result> found;
  if (const json* v = field(so, "json")) found.push_back(make(grammar_kind::json_schema, schema_text(*v, ordered_child(oso, "json"), p + ".json"), p + ".json"));
  if (const json* v = field(so, "regex")) found.push_back(make(grammar_kind::regex, nonempty_string(*v, p + ".regex"), p + ".regex"));
  if (const json* v = field(so, "choice")) found.push_back(make(grammar_kind::choice, choice_list(*v, p + ".choice"), p + ".choice"));
  if (const json* v = field(so, "grammar")) found.push_back(make(grammar_kind::gbnf, nonempty_string(*v, p + ".grammar"), p + ".grammar"));
  if (const json* v = field(so, "json_object")) {
    if (!v->is_boolean()) return std::unexpected(bad_request(p + ".json_object must be a boolean", p + ".json_object"));
    if (v->get<bool>()) found.push_back(make(grammar_kind::json_schema, std::string(any_object_schema), p + ".json_object"));
  }
  if (found.size() > 1) {
    return std::unexpected(bad_request(p + " may hold one of json, regex, choice, grammar and json_object", p));
  }
  if (found.empty()) return std::nullopt;
  return found.front();
}

/// Every top-level field that asks for a constraint, in the order they are checked.
std::vector<std::pair<const char*, constraint_result (*)(const json&, const ojson&)>> constraint_fields() {
  return {
      {"response_format", from_response_format},
      {"structured_outputs", from_structured_outputs},
      {"guided_json", [](const json& v, const ojson& ov) {
         return make(grammar_kind::json_schema, schema_text(v, ov, "guided_json"), "guided_json");
       }},
      {"guided_regex", [](const json& v, const ojson&) { return make(grammar_kind::regex, nonempty_string(v, "guided_regex"), "guided_regex"); }},
      {"guided_choice", [](const json& v, const ojson&) { return make(grammar_kind::choice, choice_list(v, "guided_choice"), "guided_choice"); }},
      {"guided_grammar", [](const json& v, const ojson&) { return make(grammar_kind::gbnf, nonempty_string(v, "guided_grammar"), "guided_grammar"); }},
      {"json_schema", [](const json& v, const ojson& ov) {
         return make(grammar_kind::json_schema, schema_text(v, ov, "json_schema"), "json_schema");
       }},
      {"grammar", [](const json& v, const ojson&) { return make(grammar_kind::gbnf, nonempty_string(v, "grammar"), "grammar"); }},
  };
}

}  // namespace

constraint_result try_parse_constraint(const json& body, const ojson& ordered) {
  std::optional<named_constraint> found;
  for (const auto& [key, parse] : constraint_fields()) {
    const json* v = field(body, key);
    if (!v) continue;
    auto c = parse(*v, ordered_child(ordered, key));
    if (!c) return std::unexpected(c.error());
    if (!*c) continue;
    if (found) {
      return std::unexpected(bad_request("one constraint per request: " + found->param + " and " + (*c)->param +
                                             " were both given",
                                         key, "conflicting_constraints"));
    }
    found = std::move(*c);
  }
  return found;
}

api_result<std::shared_ptr<const token_index>> try_compile_constraint(const served_model& m, const named_constraint& c) {
  if (!m.grammars) return std::unexpected(bad_request("structured outputs are not available for this model", c.param));
  const auto start = std::chrono::steady_clock::now();
  const auto num_misses = m.grammars->num_misses();
  auto index = m.grammars->try_get(c.spec);
  if (!index) {
    if (m.metrics) m.metrics->grammar_refused_total.fetch_add(1, std::memory_order_relaxed);
    return std::unexpected(bad_request(c.param + ": " + index.error().message, c.param, "invalid_grammar"));
  }
  (*index)->warm_up();
  if (m.metrics && m.grammars->num_misses() != num_misses) {  // compiled now (not a cache hit)
    m.metrics->grammar_compile_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return *index;
}

opt_error parse_logit_bias(const json& body, const served_model& m, std::vector<logit_bias_entry>& out) {
  const json* lb = field(body, "logit_bias");
  if (!lb) return {};
  const std::string p = "logit_bias";
  if (!lb->is_object()) return bad_request(p + " must be an object of token ids to biases", p);
  out.clear();
  for (const auto& [key, value] : lb->items()) {
    long long id = -1;
    const char* end = key.data() + key.size();
    const auto [ptr, ec] = std::from_chars(key.data(), end, id);
    if (key.empty() || ec != std::errc() || ptr != end)
      return bad_request(p + " keys must be token ids (integers), got \"" + key + "\"", p);
    if (id < 0 || id >= m.vocab_size) {
      return bad_request(p + " holds token id " + key + ", outside the vocabulary [0, " +
                             std::to_string(m.vocab_size) + ")", p);
    }
    if (!value.is_number()) return bad_request(p + "[\"" + key + "\"] must be a number", p);
    const double bias = value.get<double>();
    if (!(bias >= -100.0 && bias <= 100.0))
      return bad_request(p + "[\"" + key + "\"] must be in [-100, 100]", p);
    out.push_back({static_cast<token_id>(id), static_cast<float>(bias)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.token < b.token; });
  return {};
}

}  // namespace inflight::gateway
