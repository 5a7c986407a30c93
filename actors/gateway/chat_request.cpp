#include "actors/gateway/chat_request.hpp"

#include <array>
#include <string_view>

#include "actors/gateway/chat_messages.hpp"
#include "actors/gateway/json_fields.hpp"

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

/// Template variables chat_template_kwargs may not set: the request gives them.
constexpr std::array<std::string_view, 3> reserved_variables = {"messages", "tools", "documents"};

/// `key` of the body (present) in the client's key order where the ordered body has it.
ojson ordered_field(const json& body, const ojson& ordered, const char* key) {
  return with_order(body.at(key), ordered_child(ordered, key));
}

opt_error read_template_kwargs(const json& body, const ojson& ordered, chat_input& input) {
  const json* kwargs = field(body, "chat_template_kwargs");
  if (!kwargs) return {};
  if (!kwargs->is_object())
    return bad_request("chat_template_kwargs must be an object of template variables", "chat_template_kwargs");
  for (const auto name : reserved_variables) {
    if (kwargs->contains(name)) {
      return bad_request("chat_template_kwargs may not set '" + std::string(name) + "': the request gives it",
                         "chat_template_kwargs." + std::string(name));
    }
  }
  const ojson values = ordered_field(body, ordered, "chat_template_kwargs");
  for (auto it = values.begin(); it != values.end(); ++it) input.extra[it.key()] = it.value();
  return {};
}

opt_error read_reasoning_effort(const json& body, chat_input& input) {
  const json* effort = field(body, "reasoning_effort");
  if (!effort) return {};
  if (!(effort->is_string() && (*effort == "low" || *effort == "medium" || *effort == "high")))
    return bad_request("reasoning_effort must be \"low\", \"medium\" or \"high\"", "reasoning_effort");
  input.extra["reasoning_effort"] = effort->get<std::string>();
  return {};
}

opt_error read_generation_prompt(const json& body, chat_input& input) {
  if (auto e = read_bool(body, "add_generation_prompt", input.add_generation_prompt)) return e;
  if (auto e = read_bool(body, "continue_final_message", input.continue_final_message)) return e;
  if (!input.continue_final_message) return {};
  if (field(body, "add_generation_prompt") && input.add_generation_prompt)
    return bad_request("continue_final_message and add_generation_prompt cannot both be true", "continue_final_message");
  input.add_generation_prompt = false;
  return {};
}

api_result<std::optional<chat_template>> read_request_template(const json& body) {
  const json* text = field(body, "chat_template");
  if (!text) return std::nullopt;
  if (!text->is_string() || text->get_ref<const std::string&>().empty())
    return std::unexpected(bad_request("chat_template must be a non-empty template text", "chat_template"));
  auto t = chat_template::try_from_jinja(text->get_ref<const std::string&>());
  if (!t) return std::unexpected(bad_request("chat_template does not parse: " + t.error().message, "chat_template"));
  return std::optional(std::move(*t));
}

}  // namespace

ojson parse_ordered_body(const std::string& text) {
  auto body = ojson::parse(text, nullptr, false);
  return body.is_object() ? body : ojson();
}

api_result<chat_prompt_request> try_parse_chat_prompt(const json& body, const ojson& ordered, const tool_request& tools) {
  chat_prompt_request r;
  if (auto e = read_generation_prompt(body, r.input)) return std::unexpected(*e);
  if (auto e = read_template_kwargs(body, ordered, r.input)) return std::unexpected(*e);
  if (auto e = read_reasoning_effort(body, r.input)) return std::unexpected(*e);
  auto request_template = read_request_template(body);
  if (!request_template) return std::unexpected(request_template.error());
  r.request_template = std::move(*request_template);
  r.input.messages = template_messages(ordered_field(body, ordered, "messages"));
  if (!tools.functions.empty()) r.input.tools = tools.definitions;  // in the client's order (try_parse_tools)
  return r;
}

api_result<std::vector<token_id>> try_tokenize_chat_prompt(const served_model& m, const chat_prompt_request& r) {
  const bool is_own = r.request_template.has_value();
  auto ids = try_tokenize_chat(m, r.input, is_own ? &*r.request_template : nullptr);
  if (!ids) return std::unexpected(to_api_error(ids.error(), is_own ? "chat_template" : "messages"));
  return std::move(*ids);
}

}  // namespace inflight::gateway
