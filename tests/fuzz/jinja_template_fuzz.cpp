// libFuzzer harness: Jinja template text (a model's chat template is untrusted input),
// parsed and rendered with a fixed chat context (messages with a tool call and a tool
// result, tools, special tokens) under small limits. A template parses or fails with a
// positioned error; a render produces output within the limit or fails with a message;
// rendering is repeatable.
#include <nlohmann/json.hpp>

#include "core/model/template/jinja_template.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

const nlohmann::ordered_json& context() {
  static const auto ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Weather in Oslo? \u00e9\u4e2d"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call00001", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Oslo", "days": [1, 2.5, true, null]}}}]},
      {"role": "tool", "tool_call_id": "call00001", "content": "12 degrees"},
      {"role": "assistant", "content": "<think>\nok\n</think>\n\nIt is 12 degrees."},
      {"role": "user", "content": "thanks"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "enable_thinking": false
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto source = fuzz::as_text(data, size);
  auto t = jinja::jinja_template::try_parse(source);
  if (!t) {
    fuzz::note(t.error().message);
    FUZZ_CHECK(t.error().code == errc::invalid_argument);
    FUZZ_CHECK(t.error().message.starts_with("template line "));
    return 0;
  }
  jinja::render_limits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_iterations = 20000;
  auto out = t->try_render(context(), limits);
  if (!out) {
    fuzz::note(out.error().message);
    FUZZ_CHECK(out.error().code == errc::invalid_argument);
    FUZZ_CHECK(!out.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(out->size() <= limits.max_output_bytes);
  if (source.find("strftime_now") == std::string_view::npos) {
    auto again = t->try_render(context(), limits);
    FUZZ_CHECK(again && *again == *out);
  }
  return 0;
}
