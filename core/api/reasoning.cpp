#include "core/api/reasoning.hpp"

#include <algorithm>

namespace inflight {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

/// The length of the longest end of `text` that is a proper start of `marker`.
std::size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  return 0;
}

}  // namespace

result<std::optional<reasoning_markers>> try_reasoning_markers(std::string_view parser_name,
                                                               std::string_view template_source) {
  if (parser_name == "none") return std::optional<reasoning_markers>{};
  if (parser_name == "think" || parser_name == "deepseek_r1" || parser_name == "qwen3")
    return std::optional<reasoning_markers>{reasoning_markers{}};
  if (parser_name == "auto") {
    const reasoning_markers think;
    if (template_source.find(think.end) != std::string_view::npos) return std::optional<reasoning_markers>{think};
    return std::optional<reasoning_markers>{};
  }
  return make_error(errc::invalid_argument, "model.reasoning_parser: unknown parser '" + std::string(parser_name) +
                                                "' (one of auto, none, think, deepseek_r1, qwen3)");
}

bool prompt_opens_reasoning(const reasoning_markers& markers, std::string_view prompt_tail) {
  while (!prompt_tail.empty() && is_space(prompt_tail.back())) prompt_tail.remove_suffix(1);
  return prompt_tail.ends_with(markers.begin);
}

reasoning_splitter::reasoning_splitter(reasoning_markers markers, bool is_open)
    : markers_(std::move(markers)), phase_(is_open ? phase::reasoning : phase::start) {}

reasoning_delta reasoning_splitter::push(std::string_view text) {
  held_ += text;
  reasoning_delta out;
  step(out);
  return out;
}

/// Moves what held_ decides into `out`, phase by phase, until the rest is undecided.
void reasoning_splitter::step(reasoning_delta& out) {
  for (;;) {
    const std::string_view held = held_;
    switch (phase_) {
      case phase::start: {
        const std::string_view rest = trim_left(held);
        if (rest.size() < markers_.begin.size() && std::string_view(markers_.begin).starts_with(rest)) return;
        if (rest.starts_with(markers_.begin)) {
          held_.erase(0, held.size() - rest.size() + markers_.begin.size());
          phase_ = phase::reasoning;
        } else {
          phase_ = phase::answer;
        }
        break;
      }
      case phase::reasoning: {
        const auto at = held.find(markers_.end);
        if (at == std::string_view::npos) {
          const std::size_t keep = partial_marker_at_end(held, markers_.end);
          out.reasoning += held.substr(0, held.size() - keep);
          held_.erase(0, held.size() - keep);
          return;
        }
        out.reasoning += held.substr(0, at);
        held_.erase(0, at + markers_.end.size());
        phase_ = phase::answer_start;
        break;
      }
      case phase::answer_start: {
        const std::string_view rest = trim_left(held);
        held_.erase(0, held.size() - rest.size());
        if (held_.empty()) return;
        phase_ = phase::answer;
        break;
      }
      case phase::answer:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

reasoning_delta reasoning_splitter::finish() {
  reasoning_delta out;
  if (phase_ == phase::start) phase_ = phase::answer;  // a begin marker never completed
  if (phase_ == phase::reasoning) {
    out.reasoning = std::exchange(held_, {});
  } else if (phase_ == phase::answer) {
    out.content = std::exchange(held_, {});
  }
  held_.clear();
  return out;
}

reasoning_delta split_reasoning(const reasoning_markers& markers, bool is_open, std::string_view text) {
  reasoning_splitter splitter(markers, is_open);
  reasoning_delta out = splitter.push(text);
  const reasoning_delta rest = splitter.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  return out;
}

}  // namespace inflight
