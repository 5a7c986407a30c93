#pragma once
/// Tool calls of a streaming response: output text goes in as it is generated; out come
/// plain text to send as content and pieces of calls (a call's first piece carries its
/// name, later ones pieces of its arguments). Text that may still turn out to be a call
/// is held back until it is clear either way, so content never shows a call's markup.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/tool_calls.hpp"

namespace inflight {

class tool_call_stream {
 public:
  explicit tool_call_stream(tool_call_format format) : format_(format) {}

  /// One piece of call `index` (0, 1, ... in output order).
  struct call_piece {
    int index = 0;
    std::optional<std::string> name;  ///< set on the call's first piece only
    std::string arguments;            ///< the next piece of its arguments text ("" on the first)
  };
  struct delta {
    std::string content;
    std::vector<call_piece> calls;
    bool is_empty() const { return content.empty() && calls.empty(); }
  };

  /// Adds generated text.
  delta push(std::string_view text);
  /// End of output: releases what was held.
  delta finish();

  /// Calls started so far.
  int num_calls() const { return static_cast<int>(num_args_sent_.size()); }
  /// After finish(): a call whose arguments or frame the output cut off.
  bool has_incomplete_call() const { return has_incomplete_call_; }

 private:
  delta advance(bool is_final);

  tool_call_format format_;
  std::string text_;
  std::size_t num_content_sent_ = 0;
  std::vector<std::size_t> num_args_sent_;  ///< per started call
  bool has_incomplete_call_ = false;
};

}  // namespace inflight
