#pragma once
/// Tools on the way in: the functions a request offers, the grammar that forces a call
/// (tool_choice "required" or a named function), and a conversation with tools and tool
/// calls flattened for the built-in renderers (the model's own Jinja template gets them
/// as they are, through chat_input).

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/tool_calls.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "core/model/template/chat_template.hpp"

namespace inflight {

/// A function the model may call (OpenAI `tools[i].function`).
struct tool_function {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  ///< JSON Schema of its arguments; null = it takes none
};

/// The JSON Schema of one call object in `format`:
///   {"name": <const name>, "arguments" (llama3_json: "parameters"): <its parameters>}.
nlohmann::ordered_json tool_call_schema(tool_call_format format, const tool_function& tool);

/// The grammar of one call (or, when `is_parallel`, one or more) to any of `tools`, in
/// the format's syntax, so that the output always parses and its arguments validate:
///   hermes       `<tool_call>\n{call}\n</tool_call>`, separated by "\n"
///   llama3_json  `{call}`, separated by "; "
///   json         `{call}`, or `[{call}, ...]` when parallel
grammar_spec tool_call_grammar(tool_call_format format, std::span<const tool_function> tools, bool is_parallel);

/// How a built-in renderer takes tools.
struct tool_prompt_style {
  tool_call_format format = tool_call_format::json;
  std::string tool_role = "tool";  ///< the role tool results are written under
  bool has_system_role = true;     ///< false: the tool list opens the first user message
};

/// The renderer's style for a family renderer name ("chatml", "qwen3", "llama-3",
/// "llama-2", "mistral", "zephyr"; "plain" for the plain-text fallback).
tool_prompt_style tool_style_for(std::string_view renderer_name, tool_call_format format);

/// `input` as role + text turns for a built-in renderer: the tool list (`input.tools`)
/// described in the system message with the format's call syntax, assistant tool_calls
/// written in that syntax after the message's text, and tool results as `tool_role`
/// messages (consecutive ones merged when that role is "user").
std::vector<chat_message> flatten_tool_conversation(const chat_input& input, const tool_prompt_style& style);

/// The text of a message's content: a string, text parts joined, null as "".
std::string content_text(const nlohmann::ordered_json& content);

}  // namespace inflight
