#pragma once
/// Tool calls in a model's output, per model family:
///   hermes       Qwen2.5 / Qwen3 / Hermes: `<tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>`,
///                several in a row for parallel calls; text around them is content
///   llama3_json  Llama 3.1 / 3.2: the whole output is `{"name": .., "parameters": {..}}`,
///                optionally after `<|python_tag|>`, several separated by `;`
///   json         any other model: the whole output is `{"name": .., "arguments": {..}}`
///                or a list of such objects
/// A call object may say "arguments" or "parameters" in every format; its arguments are
/// a JSON object (or a string holding one). Output that does not parse is plain text.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace inflight {

enum class tool_call_format { hermes, llama3_json, json };

/// "hermes", "llama3_json", "json".
const char* to_string(tool_call_format format);
/// A format by its name; "auto" is not a format (see detect_tool_call_format).
result<tool_call_format> try_tool_call_format(std::string_view name);

/// The format a model writes, from its chat template text (its tool-call markers) and
/// the name of the family renderer in use ("chatml", "qwen3", "llama-3", ...; "" = none).
tool_call_format detect_tool_call_format(std::string_view template_source, std::string_view renderer_name);

/// One call as OpenAI returns it.
struct tool_call {
  std::string name;
  std::string arguments;  ///< a JSON object, as compact text
  friend bool operator==(const tool_call&, const tool_call&) = default;
};

/// A whole output split into content and calls.
struct parsed_tool_output {
  std::optional<std::string> content;  ///< none: the output was calls only
  std::vector<tool_call> calls;
};

/// Parses a finished output. Calls are returned only when every call-like part parses;
/// otherwise the whole text is content. With calls, the text around them (trimmed) is
/// the content, none when empty. Names are not checked against the request's tools.
parsed_tool_output parse_tool_calls(tool_call_format format, std::string_view text);

// --- the prefix parser shared with streaming (tool_call_stream.hpp) ---------------------

/// A call as far as the text so far shows it.
struct partial_call {
  std::optional<std::string> name;  ///< once its string is complete
  std::string arguments;            ///< the arguments text so far (raw JSON of the object)
  bool is_arguments_raw = true;     ///< false: they were a JSON string, known only when complete
  bool is_arguments_complete = false;
  bool is_complete = false;         ///< the call object (and its frame) closed
};

/// Text so far read as content and calls.
struct partial_tool_output {
  std::string content;  ///< text that is certainly content (not held back)
  std::vector<partial_call> calls;
  bool is_text = false;  ///< the output cannot be calls (whole-output formats): all of it is content
  bool is_malformed = false;  ///< some call-like text did not parse (it is in `content`)
};

/// Reads `text`, which may be cut anywhere. `is_final`: nothing follows.
partial_tool_output parse_tool_prefix(tool_call_format format, std::string_view text, bool is_final);

}  // namespace inflight
