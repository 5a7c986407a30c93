#pragma once
/// The tool fields of a chat request (`tools`, `tool_choice`, `parallel_tool_calls`),
/// checked, with the grammar that forces a call when tool_choice asks for one.
///   tool_choice  "none": tools stay in the prompt, the output is text
///                "auto" (the default with tools): the model chooses; its output is parsed
///                "required": one or more calls (one when parallel_tool_calls is false),
///                grammar-enforced in the model's call syntax
///                {"type": "function", "function": {"name": n}}: one call to n, enforced

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"
#include "core/api/tool_prompt.hpp"

namespace inflight::gateway {

enum class tool_choice_mode { none, automatic, required, named };

struct tool_request {
  std::vector<tool_function> functions;
  nlohmann::ordered_json definitions;  ///< `tools` as the chat template reads them; null = none
  tool_choice_mode mode = tool_choice_mode::automatic;
  std::string forced_name;             ///< mode == named
  bool is_parallel = true;             ///< parallel_tool_calls

  /// The output is read for calls (tools given and tool_choice is not "none").
  bool parses_output() const { return !functions.empty() && mode != tool_choice_mode::none; }
  /// A grammar forces the calls.
  bool is_forced() const { return mode == tool_choice_mode::required || mode == tool_choice_mode::named; }
};

/// Reads tools, tool_choice and parallel_tool_calls; every error a 400 naming the field
/// (`tools[1].function.name`, `tool_choice`).
/// `ordered`: the same body in the client's key order (definitions and parameters keep it).
api_result<tool_request> try_parse_tools(const nlohmann::json& body, const nlohmann::ordered_json& ordered = nullptr);

/// The grammar spec that forces the calls of a forced tool_request, in the model's format.
grammar_spec forced_tool_grammar(const tool_request& tools, const served_model& m);

/// forced_tool_grammar compiled through the model's grammar cache. A parameters schema
/// the compiler refuses is a 400 naming `tools[i].function.parameters`, the keyword and
/// its path inside that schema.
api_result<std::shared_ptr<const token_index>> try_compile_tool_grammar(const tool_request& tools,
                                                                        const served_model& m);

}  // namespace inflight::gateway
