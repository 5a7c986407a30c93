#!/usr/bin/python3
"""Renders chat templates as Hugging Face transformers' apply_chat_template does (jinja2's
immutable sandbox, trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception and
strftime_now, a {% generation %} block rendered in place) over a fixed set of conversations,
and writes every case with its rendering or its error, for template_compare to check
inflight's interpreter against:

  jinja2_oracle.py OUT.json TEMPLATES...

A TEMPLATES argument is a .jinja file, a tokenizer_config.json, or a JSON object
{name: {"template": text, "bos": text, "eos": text}}. strftime_now reads a fixed clock
(FIXED_NOW, UTC) that the comparison gives inflight too.
"""

import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = 1736942400  # 2025-01-15 12:00:00 UTC


class GenerationBlock(jinja2.ext.Extension):
    """transformers' AssistantTracker without the tracking: the body is rendered in place."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(FIXED_NOW, datetime.timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# Tool definitions with keys in a non-alphabetical order, as a client sends them.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}
SEARCH = {"type": "function", "function": {
    "name": "web_search", "description": "Search the web — returns snippets",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
        "required": ["query"]}}}
TOOLS = [WEATHER, SEARCH]

CALL = {"id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"unit": "celsius", "location": "Paris, France"}}}
CALL2 = {"id": "call67890", "type": "function",
         "function": {"name": "web_search", "arguments": {"query": "météo à Paris", "max_results": 3}}}


def conversations():
    """(name, messages, tools, add_generation_prompt, extra variables)."""
    hello = [{"role": "user", "content": "Hello!"}]
    system = [{"role": "system", "content": "You are a helpful assistant."},
              {"role": "user", "content": "What is 2+2?"}]
    multi = [{"role": "system", "content": "Be brief."},
             {"role": "user", "content": "Name a color."},
             {"role": "assistant", "content": "Blue."},
             {"role": "user", "content": "Another one?"}]
    unicode = [{"role": "user", "content": "  padded question \n"},
               {"role": "assistant", "content": "\n answer with spaces  "},
               {"role": "user", "content": "多语言 — émoji 😀 \"quotes\" \\ back\nsecond line"}]
    tool_turn = [{"role": "system", "content": "You can call tools."},
                 {"role": "user", "content": "Weather in Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [CALL]},
                 {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                  "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}]
    two_calls = [{"role": "user", "content": "Weather and news for Paris?"},
                 {"role": "assistant", "content": None, "tool_calls": [CALL, CALL2]},
                 {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "21 C"},
                 {"role": "tool", "tool_call_id": "call67890", "name": "web_search", "content": "Sunny all week"},
                 {"role": "assistant", "content": "It is 21 C and sunny."},
                 {"role": "user", "content": "Thanks!"}]
    thinking = [{"role": "user", "content": "Why is the sky blue?"},
                {"role": "assistant", "content": "Rayleigh scattering.", "reasoning_content": "Short light scatters more."},
                {"role": "user", "content": "And sunsets?"}]
    final = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    parts = [{"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "this."}]}]
    return [
        ("hello", hello, None, True, {}),
        ("hello-no-prompt", hello, None, False, {}),
        ("system", system, None, True, {}),
        ("multi-turn", multi, None, True, {}),
        ("unicode", unicode, None, True, {}),
        ("final-assistant", final, None, False, {}),
        ("content-parts", parts, None, True, {}),
        ("tools", system, TOOLS, True, {}),
        ("tools-user-only", hello, TOOLS, True, {}),
        ("tool-call-and-result", tool_turn, TOOLS, True, {}),
        ("two-calls", two_calls, TOOLS, True, {}),
        ("thinking-off", thinking, None, True, {"enable_thinking": False}),
        ("thinking-on", thinking, None, True, {"enable_thinking": True}),
        ("reasoning-effort", system, None, True, {"reasoning_effort": "high"}),
        ("tools-thinking-off", tool_turn, TOOLS, True, {"enable_thinking": False}),
    ]


def token_text(token):
    if isinstance(token, dict):
        return token.get("content", "")
    return token or ""


def load_templates(paths):
    """{name: (template, bos, eos)} from .jinja files, tokenizer_config.json files and JSON maps."""
    out = {}
    for path in paths:
        if path.endswith(".jinja"):
            with open(path, encoding="utf-8") as f:
                out[os.path.basename(path)[:-6]] = (f.read(), "<s>", "</s>")
            continue
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if "chat_template" in doc or "bos_token" in doc:
            template = doc.get("chat_template")
            if isinstance(template, list):
                template = next((t["template"] for t in template if t.get("name") == "default"), None)
            if template:
                name = os.path.basename(os.path.dirname(os.path.dirname(path))) or path
                out[name] = (template, token_text(doc.get("bos_token")), token_text(doc.get("eos_token")))
            continue
        for name, t in doc.items():
            out[name] = (t["template"], t.get("bos", "<s>"), t.get("eos", "</s>"))
    return out


def render(env, template, context):
    try:
        return {"ok": True, "text": env.from_string(template).render(**context)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"ok": False, "kind": "syntax", "error": str(e)}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception's TemplateError, or an undefined / security error of jinja2's own
        kind = "raise" if type(e) is jinja2.exceptions.TemplateError else "error"
        return {"ok": False, "kind": kind, "error": str(e)}
    except Exception as e:  # a Python error inside the template (TypeError, KeyError, ...)
        return {"ok": False, "kind": "error", "error": type(e).__name__ + ": " + str(e)}


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    env = make_environment()
    cases = []
    for name, (template, bos, eos) in sorted(load_templates(sys.argv[2:]).items()):
        for conv_name, messages, tools, add_prompt, extra in conversations():
            context = {"messages": messages, "tools": tools, "documents": None,
                       "add_generation_prompt": add_prompt, "bos_token": bos, "eos_token": eos, **extra}
            case = {"template_name": name, "conversation": conv_name, "template": template, "context": context}
            case.update(render(env, template, context))
            cases.append(case)
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"fixed_now": FIXED_NOW, "cases": cases}, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
