#include "core/api/tool_calls.hpp"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

namespace inflight {
namespace {

constexpr std::string_view hermes_open = "<tool_call>";
constexpr std::string_view hermes_close = "</tool_call>";
constexpr std::string_view python_tag = "<|python_tag|>";

/// How far a read got: `more` = the text ended before the construct did.
enum class scan { ok, more, bad };

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

/// A cursor over text that may be cut anywhere.
struct reader {
  std::string_view s;
  std::size_t pos = 0;

  bool at_end() const { return pos >= s.size(); }
  char peek() const { return s[pos]; }
  void skip_ws() {
    while (pos < s.size() && is_ws(s[pos])) ++pos;
  }
  scan literal(std::string_view lit) {
    const std::size_t n = std::min(lit.size(), s.size() - pos);
    if (s.substr(pos, n) != lit.substr(0, n)) return scan::bad;
    pos += n;
    return n < lit.size() ? scan::more : scan::ok;
  }
  /// A JSON string at pos; `out` gets its decoded value when complete.
  scan string(std::string* out) {
    if (at_end()) return scan::more;
    if (peek() != '"') return scan::bad;
    const std::size_t begin = pos++;
    for (; pos < s.size(); ++pos) {
      if (s[pos] == '\\') {
        ++pos;
      } else if (s[pos] == '"') {
        ++pos;
        const auto v = nlohmann::json::parse(s.substr(begin, pos - begin), nullptr, false);
        if (v.is_discarded() || !v.is_string()) return scan::bad;
        if (out) *out = v.get<std::string>();
        return scan::ok;
      } else if (static_cast<unsigned char>(s[pos]) < 0x20) {
        return scan::bad;
      }
    }
    return scan::more;
  }
  /// A JSON object or array at pos, by its brackets (validated by the caller).
  scan bracketed() {
    int depth = 0;
    bool in_string = false;
    for (; pos < s.size(); ++pos) {
      const char c = s[pos];
      if (in_string) {
        if (c == '\\') ++pos;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++pos;
          return scan::ok;
        }
      }
    }
    pos = s.size();
    return scan::more;
  }
};

bool is_json_object(std::string_view text) {
  const auto v = nlohmann::json::parse(text, nullptr, false);
  return !v.is_discarded() && v.is_object();
}

/// The value of "arguments" / "parameters": an object, or a string holding one.
scan read_arguments(reader& r, partial_call& call) {
  if (r.at_end()) return scan::more;
  if (r.peek() == '"') {
    call.is_arguments_raw = false;
    std::string text;
    const scan st = r.string(&text);
    if (st != scan::ok) return st;
    if (!is_json_object(text)) return scan::bad;
    call.arguments = std::move(text);
    call.is_arguments_complete = true;
    return scan::ok;
  }
  if (r.peek() != '{') return scan::bad;
  const std::size_t begin = r.pos;
  const scan st = r.bracketed();
  call.arguments = std::string(r.s.substr(begin, r.pos - begin));
  if (st != scan::ok) return st;
  if (!is_json_object(call.arguments)) return scan::bad;
  call.is_arguments_complete = true;
  return scan::ok;
}

/// One member of a call object: "name": string, or "arguments" / "parameters": object.
scan read_member(reader& r, partial_call& call, bool& has_arguments) {
  std::string key;
  if (scan st = r.string(&key); st != scan::ok) return st;
  r.skip_ws();
  if (scan st = r.literal(":"); st != scan::ok) return st;
  r.skip_ws();
  if (key == "name") {
    if (call.name) return scan::bad;
    std::string name;
    const scan st = r.string(&name);
    if (st == scan::ok) call.name = std::move(name);
    return st;
  }
  if (key == "arguments" || key == "parameters") {
    if (has_arguments) return scan::bad;
    has_arguments = true;
    return read_arguments(r, call);
  }
  return scan::bad;
}

/// `{"name": .., "arguments": {..}}` in either order.
scan read_call(reader& r, partial_call& call) {
  if (scan st = r.literal("{"); st != scan::ok) return st;
  bool has_arguments = false;
  for (;;) {
    r.skip_ws();
    if (scan st = read_member(r, call, has_arguments); st != scan::ok) return st;
    r.skip_ws();
    if (r.at_end()) return scan::more;
    const char c = r.peek();
    ++r.pos;
    if (c == ',') continue;
    if (c != '}') return scan::bad;
    return call.name && has_arguments ? scan::ok : scan::bad;
  }
}

/// The length of the longest suffix of `text` that begins `marker`.
std::size_t partial_marker(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

/// Reads `<tool_call>` blocks; a block that does not parse stays text.
partial_tool_output parse_hermes(std::string_view s, bool is_final) {
  partial_tool_output out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t open = s.find(hermes_open, pos);
    if (open == std::string_view::npos) {
      std::string_view tail = s.substr(pos);
      if (!is_final) tail.remove_suffix(partial_marker(tail, hermes_open));
      out.content += tail;
      return out;
    }
    out.content += s.substr(pos, open - pos);
    reader r{s, open + hermes_open.size()};
    partial_call call;
    r.skip_ws();
    scan st = read_call(r, call);
    if (st == scan::ok) {
      r.skip_ws();
      st = r.literal(hermes_close);
      if (st == scan::more && is_final) st = scan::ok;  // the closing tag cut off: the call is whole
    }
    if (st == scan::more) {
      out.calls.push_back(std::move(call));
      return out;
    }
    if (st == scan::ok) {
      call.is_complete = true;
      out.calls.push_back(std::move(call));
      pos = r.pos;
      continue;
    }
    out.is_malformed = true;
    const std::size_t close = s.find(hermes_close, open);
    const std::size_t end = close == std::string_view::npos ? s.size() : close + hermes_close.size();
    out.content += s.substr(open, end - open);
    pos = end;
    if (end == s.size()) return out;
  }
  return out;
}

/// Whole-output formats: calls from the first non-space character, else all text.
/// llama3_json: `[<|python_tag|>] call (; call)*`; json: `call` or `[call, ...]`.
partial_tool_output parse_whole(std::string_view s, bool is_final, bool is_llama3) {
  partial_tool_output out;
  reader r{s, 0};
  r.skip_ws();
  if (is_llama3) {
    const std::size_t start = r.pos;
    const scan tag = r.literal(python_tag);
    if (tag == scan::more && !is_final) return out;
    if (tag != scan::ok) r.pos = start;
    r.skip_ws();
  }
  if (r.at_end()) {
    if (is_final) {
      out.is_text = true;
      out.content = std::string(s);
    }
    return out;
  }
  const bool is_list = !is_llama3 && r.peek() == '[';
  if (r.peek() != '{' && !is_list) {
    out.is_text = true;
    out.content = std::string(s);
    return out;
  }
  if (is_list) ++r.pos;
  for (;;) {
    r.skip_ws();
    const std::size_t call_start = r.pos;
    partial_call call;
    const scan st = read_call(r, call);
    if (st == scan::more) {  // at the end of a final text: cut off, an incomplete call
      out.calls.push_back(std::move(call));
      return out;
    }
    if (st != scan::ok) {
      if (out.calls.empty()) {
        out.is_text = true;
        out.content = std::string(s);
      } else {
        out.is_malformed = true;
        out.content = std::string(s.substr(call_start));
      }
      return out;
    }
    call.is_complete = true;
    out.calls.push_back(std::move(call));
    r.skip_ws();
    const std::size_t after = r.pos;
    if (r.at_end()) {
      if (is_final && is_list) out.is_malformed = true;
      return out;
    }
    const char c = r.peek();
    ++r.pos;
    if ((is_llama3 && c == ';') || (is_list && c == ',')) continue;
    if (is_list && c == ']') {
      r.skip_ws();
      if (r.at_end()) return out;
    }
    out.is_malformed = true;
    out.content = std::string(s.substr(after));
    return out;
  }
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return std::string(s);
}

constexpr std::array<std::pair<tool_call_format, std::string_view>, 3> format_names{{
    {tool_call_format::hermes, "hermes"},
    {tool_call_format::llama3_json, "llama3_json"},
    {tool_call_format::json, "json"},
}};

}  // namespace

const char* to_string(tool_call_format format) {
  for (const auto& [f, name] : format_names)
    if (f == format) return name.data();
  return "json";
}

result<tool_call_format> try_tool_call_format(std::string_view name) {
  for (const auto& [f, n] : format_names)
    if (n == name) return f;
  return make_error(errc::invalid_argument, "unknown tool call format '" + std::string(name) +
                                                "': one of \"auto\" | \"hermes\" | \"llama3_json\" | \"json\"");
}

tool_call_format detect_tool_call_format(std::string_view source, std::string_view renderer) {
  if (contains(source, hermes_open)) return tool_call_format::hermes;
  if (contains(source, python_tag) || (contains(source, "<|start_header_id|>") && contains(source, "\"parameters\"")))
    return tool_call_format::llama3_json;
  if (renderer == "chatml" || renderer == "qwen3") return tool_call_format::hermes;
  if (renderer == "llama-3") return tool_call_format::llama3_json;
  return tool_call_format::json;
}

partial_tool_output parse_tool_prefix(tool_call_format format, std::string_view text, bool is_final) {
  switch (format) {
    case tool_call_format::hermes: return parse_hermes(text, is_final);
    case tool_call_format::llama3_json: return parse_whole(text, is_final, true);
    case tool_call_format::json: return parse_whole(text, is_final, false);
  }
  return parse_whole(text, is_final, false);
}

parsed_tool_output parse_tool_calls(tool_call_format format, std::string_view text) {
  const partial_tool_output p = parse_tool_prefix(format, text, true);
  const auto is_valid = [](const partial_call& c) { return c.is_complete && c.name.has_value(); };
  if (p.is_text || p.is_malformed || p.calls.empty() || !std::all_of(p.calls.begin(), p.calls.end(), is_valid))
    return {std::string(text), {}};
  parsed_tool_output out;
  std::string content = trimmed(p.content);
  if (!content.empty()) out.content = std::move(content);
  for (const auto& c : p.calls) out.calls.push_back({*c.name, c.arguments});
  return out;
}

}  // namespace inflight
