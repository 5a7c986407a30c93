#include "core/api/tool_call_stream.hpp"

namespace inflight {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// Content that can be sent: trailing white space waits for what follows (it is dropped
/// when the output turns out to be calls).
std::size_t sendable(const std::string& content, bool is_final, bool has_calls) {
  if (is_final && !has_calls) return content.size();
  std::size_t n = content.size();
  while (n > 0 && is_ws(content[n - 1])) --n;
  return n;
}

}  // namespace

tool_call_stream::delta tool_call_stream::push(std::string_view text) {
  text_ += text;
  return advance(false);
}

tool_call_stream::delta tool_call_stream::finish() { return advance(true); }

tool_call_stream::delta tool_call_stream::advance(bool is_final) {
  delta out;
  if (is_final && num_args_sent_.empty() && parse_tool_calls(format_, text_).calls.empty()) {
    // No call was sent and none is there: everything not sent yet is text (what was
    // sent is a prefix of it: only text after a possible call start is ever held).
    out.content = text_.substr(num_content_sent_);
    num_content_sent_ = text_.size();
    return out;
  }
  const partial_tool_output p = parse_tool_prefix(format_, text_, is_final);
  const std::size_t limit = sendable(p.content, is_final, !p.calls.empty() && !p.is_text);
  if (limit > num_content_sent_) {
    out.content = p.content.substr(num_content_sent_, limit - num_content_sent_);
    num_content_sent_ = limit;
  }
  if (p.is_text) return out;
  for (std::size_t i = 0; i < p.calls.size(); ++i) {
    const partial_call& c = p.calls[i];
    if (i == num_args_sent_.size()) {
      if (!c.name) break;  // later calls wait for this one's name
      out.calls.push_back({int(i), c.name, {}});
      num_args_sent_.push_back(0);
    }
    const bool can_send = c.is_arguments_raw || c.is_arguments_complete;
    std::size_t& sent = num_args_sent_[i];
    if (can_send && c.arguments.size() > sent) {
      out.calls.push_back({int(i), std::nullopt, c.arguments.substr(sent)});
      sent = c.arguments.size();
    }
    if (is_final && !c.is_complete) has_incomplete_call_ = true;
  }
  return out;
}

}  // namespace inflight
