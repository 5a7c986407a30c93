// The Jinja-backed chat template (core/model/template/chat_jinja.cpp): the model's own
// template executed with messages, tools and extra variables; the fallback to the
// family renderers when it cannot run.
#include <catch2/catch.hpp>

#include "core/model/template/chat_template.hpp"

using inflight::chat_family;
using inflight::chat_input;
using inflight::chat_message;
using inflight::chat_template;
using ojson = nlohmann::ordered_json;

namespace {

// A ChatML template with Hermes-style tool calls, as Qwen2.5's (shortened).
constexpr const char* tool_template = R"({%- if tools %}
    {{- '<|im_start|>system\n# Tools\n<tools>' }}
    {%- for tool in tools %}
        {{- "\n" }}{{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools><|im_end|>\n" }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "assistant" and message.tool_calls %}
        {{- '<|im_start|>assistant' }}
        {%- for tool_call in message.tool_calls %}
            {{- '\n<tool_call>\n{"name": "' }}{{ tool_call.function.name }}{{ '", "arguments": ' }}
            {{- tool_call.function.arguments | tojson }}{{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}
{%- endif %}
)";

}  // namespace

TEST_CASE("a Jinja chat template renders messages, tool calls, tool results and tools", "[core][tokenizer][chat]") {
  auto t = chat_template::try_from_jinja(tool_template);
  REQUIRE(t);
  CHECK(t->family() == chat_family::jinja);
  CHECK(t->name() == "jinja");
  chat_input in;
  in.messages = ojson::parse(R"([
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "12 degrees"}])");
  in.tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"z": 1, "a": 2}}}])");
  in.extra = {{"enable_thinking", false}};
  auto text = t->try_render(in);
  REQUIRE(text);
  CHECK(*text ==
        "<|im_start|>system\n# Tools\n<tools>\n"
        R"({"type": "function", "function": {"name": "get_weather", "parameters": {"z": 1, "a": 2}}})"
        "\n</tools><|im_end|>\n"
        "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"c\"}}\n"
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n12 degrees\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST_CASE("the role + content overload renders a Jinja template too", "[core][tokenizer][chat]") {
  auto t = chat_template::try_from_jinja("{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                                         "{% if add_generation_prompt %}>{% endif %}{{ eos_token }}");
  REQUIRE(t);
  const std::vector<chat_message> chat{{"system", "s"}, {"user", "u"}};
  CHECK(t->try_render(chat, true, "<s>", "</s>").value() == "<s>[system:s][user:u]></s>");
  CHECK(t->try_render(chat, false, "", "").value() == "[system:s][user:u]");
}

TEST_CASE("raise_exception in a chat template is an invalid_argument error with its message", "[core][tokenizer][chat]") {
  auto t = chat_template::try_from_jinja(
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  REQUIRE(t);
  chat_input in;
  in.messages = ojson::parse(R"([{"role": "system", "content": "x"}])");
  auto r = t->try_render(in);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == inflight::errc::invalid_argument);
  CHECK(r.error().message == "chat template: System role not supported");
}

TEST_CASE("a model template that cannot run falls back to the recognised family, saying why", "[core][tokenizer][chat]") {
  std::string warning;
  auto runs = chat_template::try_from_model("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}", &warning);
  REQUIRE(runs);
  CHECK(runs->family() == chat_family::jinja);
  CHECK(warning.empty());

  auto unparsable = chat_template::try_from_model("{% include 'x' %}<|im_start|>", &warning);
  REQUIRE(unparsable);
  CHECK(unparsable->family() == chat_family::chatml);
  CHECK(warning == "the model's chat template cannot be executed (template line 1, column 4: unknown tag 'include'); "
                   "using the built-in 'chatml' renderer recognised from its markers");

  warning.clear();
  auto fails_to_render = chat_template::try_from_model("{{ messages[0].content.nosuch() }}[INST]<<SYS>>", &warning);
  REQUIRE(fails_to_render);
  CHECK(fails_to_render->family() == chat_family::llama_2);
  CHECK_THAT(warning, Catch::Contains("has no method 'nosuch'"));

  auto neither = chat_template::try_from_model("{% frobnicate %}", &warning);
  REQUIRE_FALSE(neither);
  CHECK(neither.error().code == inflight::errc::unsupported);
  CHECK_FALSE(chat_template::try_from_model("", nullptr));
}

TEST_CASE("a model template made for tool requests is kept though it cannot render without tools",
          "[core][tokenizer][chat]") {
  // As Hermes-2-Pro's tool_use template: it reads tools unconditionally.
  const char* source =
      "{% if tools is none %}{{ raise_exception('this template needs tools') }}{% endif %}"
      "<|im_start|>system\n<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools><|im_end|>\n"
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}";
  std::string warning;
  auto t = chat_template::try_from_model(source, &warning);
  REQUIRE(t);
  CHECK(t->family() == chat_family::jinja);  // not the chatml renderer its markers would pick
  CHECK(warning.empty());
  chat_input in;
  in.messages = ojson::parse(R"([{"role": "user", "content": "Hi"}])");
  auto without_tools = t->try_render(in);
  REQUIRE_FALSE(without_tools);  // a request it cannot render is an error naming the template's message
  CHECK_THAT(without_tools.error().message, Catch::Contains("this template needs tools"));
  in.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}])");
  CHECK(t->try_render(in).value() ==
        "<|im_start|>system\n<tools>{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
        "{\"z\": 1, \"a\": 2}}}</tools><|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("continue_final_message cuts the rendering after the final message's text", "[core][tokenizer][chat]") {
  auto t = chat_template::try_from_jinja("{% for m in messages %}[{{ m.role }}]{{ m.content }}[end]{% endfor %}");
  REQUIRE(t);
  chat_input in;
  in.messages = ojson::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Sure, "}])");
  in.continue_final_message = true;
  CHECK(t->try_render(in).value() == "[user]Hi[end][assistant]Sure,");
  auto hiding = chat_template::try_from_jinja("{% for m in messages %}{{ m.role }}{% endfor %}");
  auto missing = hiding->try_render(in);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("does not appear"));
}

TEST_CASE("family renderers take the rich input's text and refuse tools", "[core][tokenizer][chat]") {
  auto t = chat_template::try_from_name("chatml");
  REQUIRE(t);
  chat_input in;
  in.messages = ojson::parse(R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                                 {"role": "assistant", "content": null}])");
  in.add_generation_prompt = false;
  CHECK(t->try_render(in).value() == "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n");
  in.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  auto refused = t->try_render(in);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == inflight::errc::unsupported);
}
