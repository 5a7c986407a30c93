#pragma once
/// A thinking model's reasoning, split from its answer. Qwen3, DeepSeek-R1, QwQ, GLM-4.5,
/// Phi-4-reasoning and others write `<think>reasoning</think>answer`; some templates open
/// the block in the prompt (DeepSeek-R1's ends with `<think>\n`), so that only the end
/// marker is generated. The splitter reads the output as it streams and says which bytes
/// are reasoning and which are the answer; what might still be the start of a marker is
/// held back until the next text decides it.
///
///   format  "think": <think> ... </think>   (model.reasoning_parser: "auto" finds it in
///           the chat template; "none" turns the split off)

#include <optional>
#include <string>
#include <string_view>

#include "core/base/error.hpp"

namespace inflight {

/// The markers around a model's reasoning.
struct reasoning_markers {
  std::string begin = "<think>";
  std::string end = "</think>";
  friend bool operator==(const reasoning_markers&, const reasoning_markers&) = default;
};

/// The markers of model.reasoning_parser: "none" (no split: nullopt), "think" (and its
/// aliases "deepseek_r1", "qwen3": <think> ... </think>), or "auto": "think" when the chat
/// template writes </think>, else none. Another name is errc::invalid_argument.
result<std::optional<reasoning_markers>> try_reasoning_markers(std::string_view parser_name,
                                                               std::string_view template_source);

/// Whether a rendered prompt leaves the model inside its reasoning: the prompt's text,
/// trailing whitespace aside, ends with the begin marker.
bool prompt_opens_reasoning(const reasoning_markers& markers, std::string_view prompt_tail);

/// One piece of output, split.
struct reasoning_delta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class reasoning_splitter {
 public:
  /// `is_open`: the prompt opened the reasoning (prompt_opens_reasoning).
  reasoning_splitter(reasoning_markers markers, bool is_open);

  /// The next text of the output.
  reasoning_delta push(std::string_view text);
  /// The end of the output: what was held back. Reasoning that never closed stays
  /// reasoning; a begin marker never completed is content.
  reasoning_delta finish();
  /// Inside the reasoning (after its begin, before its end).
  bool is_reasoning() const { return phase_ == phase::reasoning; }

 private:
  enum class phase { start, reasoning, answer_start, answer };
  void step(reasoning_delta& out);

  reasoning_markers markers_;
  phase phase_;
  std::string held_;  ///< bytes not yet decided
};

/// A whole output split at once (what the splitter gives for it in one push + finish).
reasoning_delta split_reasoning(const reasoning_markers& markers, bool is_open, std::string_view text);

}  // namespace inflight
