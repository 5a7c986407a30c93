#include "core/api/tool_prompt.hpp"

#include <algorithm>

#include "core/grammar/front_ends.hpp"

namespace inflight {

using ojson = nlohmann::ordered_json;

namespace {

const char* arguments_key(tool_call_format format) {
  return format == tool_call_format::llama3_json ? "parameters" : "arguments";
}

/// Local references ("#/$defs/x") of a schema moved to `pointer` inside a larger one.
void move_refs(ojson& schema, const std::string& pointer) {
  if (schema.is_array()) {
    for (auto& item : schema) move_refs(item, pointer);
    return;
  }
  if (!schema.is_object()) return;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (it.key() == "$ref" && it->is_string() && it->get_ref<const std::string&>().starts_with("#")) {
      *it = "#" + pointer + it->get<std::string>().substr(1);
    } else if (it.key() != "enum" && it.key() != "const") {
      move_refs(*it, pointer);
    }
  }
}

/// The call schemas of every tool, as one schema found at `pointer` in the document.
ojson any_call_schema(tool_call_format format, std::span<const tool_function> tools, const std::string& pointer) {
  if (tools.size() == 1) {
    ojson s = tool_call_schema(format, tools[0]);
    move_refs(s["properties"][arguments_key(format)], pointer + "/properties/" + arguments_key(format));
    return s;
  }
  ojson any = ojson::array();
  for (std::size_t i = 0; i < tools.size(); ++i) {
    ojson s = tool_call_schema(format, tools[i]);
    move_refs(s["properties"][arguments_key(format)],
              pointer + "/anyOf/" + std::to_string(i) + "/properties/" + arguments_key(format));
    any.push_back(std::move(s));
  }
  return {{"anyOf", std::move(any)}};
}

std::string tool_list_text(const ojson& tools, const std::string& separator) {
  std::string out;
  for (const auto& t : tools) out += (out.empty() ? "" : separator) + t.dump();
  return out;
}

std::string tools_prompt(const ojson& tools, tool_call_format format) {
  switch (format) {
    case tool_call_format::hermes:
      return "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
             "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
             tool_list_text(tools, "\n") +
             "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
             "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
             "<args-json-object>}\n</tool_call>";
    case tool_call_format::llama3_json:
      return "Given the following functions, please respond with a JSON for a function call with its proper "
             "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
             "\"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n" +
             tool_list_text(tools, "\n\n");
    case tool_call_format::json: break;
  }
  return "You can call these functions:\n" + tool_list_text(tools, "\n") +
         "\n\nTo call one, answer with only a JSON object {\"name\": function name, \"arguments\": object of its "
         "arguments}; for several calls, a JSON list of such objects.";
}

/// The arguments of a tool_calls entry as JSON text (OpenAI sends a string).
std::string call_arguments(const ojson& fn) {
  const auto it = fn.find("arguments");
  if (it == fn.end() || it->is_null()) return "{}";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string calls_text(const ojson& calls, tool_call_format format) {
  std::vector<std::string> each;
  for (const auto& call : calls) {
    const ojson& fn = call.contains("function") ? call["function"] : call;
    const std::string name = fn.value("name", std::string());
    each.push_back("{\"name\": " + ojson(name).dump() + ", \"" + arguments_key(format) +
                   "\": " + call_arguments(fn) + "}");
  }
  std::string out;
  for (std::size_t i = 0; i < each.size(); ++i) {
    if (format == tool_call_format::hermes) {
      out += (i ? "\n" : "") + std::string("<tool_call>\n") + each[i] + "\n</tool_call>";
    } else {
      out += (i ? (format == tool_call_format::llama3_json ? "; " : ", ") : "") + each[i];
    }
  }
  if (format == tool_call_format::json && each.size() > 1) out = "[" + out + "]";
  return out;
}

chat_message flatten_message(const ojson& m, const tool_prompt_style& style) {
  const std::string role = m.value("role", std::string());
  std::string text = content_text(m.value("content", ojson()));
  if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) {
    const std::string calls = calls_text(m["tool_calls"], style.format);
    text = text.empty() ? calls : text + "\n" + calls;
  }
  if (role != "tool") return {role, std::move(text)};
  if (style.tool_role != "tool" && style.format == tool_call_format::hermes)
    text = "<tool_response>\n" + text + "\n</tool_response>";
  return {style.tool_role, std::move(text)};
}

}  // namespace

std::string content_text(const ojson& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) return text;
  for (const auto& part : content) {
    if (!part.is_object()) continue;
    for (const char* key : {"text", "refusal"}) {
      const auto it = part.find(key);
      if (part.value("type", std::string()) == key && it != part.end() && it->is_string()) text += it->get<std::string>();
    }
  }
  return text;
}

ojson tool_call_schema(tool_call_format format, const tool_function& tool) {
  ojson parameters = tool.parameters.is_null() ? ojson{{"type", "object"}, {"additionalProperties", false}}
                                               : tool.parameters;
  return {{"type", "object"},
          {"properties", {{"name", {{"const", tool.name}}}, {arguments_key(format), std::move(parameters)}}},
          {"required", {"name", arguments_key(format)}},
          {"additionalProperties", false}};
}

grammar_spec tool_call_grammar(tool_call_format format, std::span<const tool_function> tools, bool is_parallel) {
  if (format == tool_call_format::json) {
    if (!is_parallel) return {grammar_kind::json_schema, any_call_schema(format, tools, "").dump()};
    const ojson list = {{"type", "array"}, {"items", any_call_schema(format, tools, "/items")}, {"minItems", 1}};
    return {grammar_kind::json_schema, list.dump()};
  }
  framed_json_spec frame;
  frame.schema = any_call_schema(format, tools, "").dump();
  if (format == tool_call_format::hermes) {
    frame.begin = "<tool_call>\n";
    frame.end = "\n</tool_call>";
    frame.separator = "\n";
  } else {
    frame.separator = "; ";
  }
  frame.min_items = 1;
  frame.max_items = is_parallel ? std::nullopt : std::optional<std::uint32_t>(1);
  return {grammar_kind::framed_json, to_json_text(frame)};
}

tool_prompt_style tool_style_for(std::string_view renderer, tool_call_format format) {
  tool_prompt_style s;
  s.format = format;
  if (renderer == "qwen3" || renderer == "plain") {
    s.tool_role = "tool";  // qwen3 wraps tool results in <tool_response> itself
  } else if (renderer == "llama-3") {
    s.tool_role = "ipython";
  } else {
    s.tool_role = "user";
  }
  s.has_system_role = renderer != "mistral";
  return s;
}

std::vector<chat_message> flatten_tool_conversation(const chat_input& input, const tool_prompt_style& style) {
  std::vector<chat_message> out;
  bool was_tool = false;
  for (const auto& m : input.messages) {
    const bool is_tool = m.value("role", std::string()) == "tool";
    chat_message msg = flatten_message(m, style);
    if (is_tool && was_tool && style.tool_role == "user") {
      out.back().content += "\n" + msg.content;  // roles must alternate: one turn for all results
      continue;
    }
    was_tool = is_tool;
    out.push_back(std::move(msg));
  }
  if (input.tools.is_array() && !input.tools.empty()) {
    const std::string tools = tools_prompt(input.tools, style.format);
    if (style.has_system_role) {
      if (!out.empty() && out.front().role == "system") {
        out.front().content += "\n\n" + tools;
      } else {
        out.insert(out.begin(), chat_message{"system", tools});
      }
    } else {
      auto user = std::find_if(out.begin(), out.end(), [](const chat_message& m) { return m.role == "user"; });
      if (user != out.end()) {
        user->content = tools + "\n\n" + user->content;
      } else {
        out.insert(out.begin(), chat_message{"user", tools});
      }
    }
  }
  return out;
}

}  // namespace inflight
