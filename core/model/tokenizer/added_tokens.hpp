#pragma once
/// Added (and special) tokens of tokenizer.json: matched in raw text before any
/// normalization or BPE, never split.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.hpp"

namespace inflight {

/// One entry of tokenizer.json's "added_tokens".
struct added_token {
  token_id id = 0;
  std::string content;
  bool is_special = false;
  bool lstrip = false;  ///< swallow white space on the left
  bool rstrip = false;  ///< swallow white space on the right
};

/// A piece of input text: either plain text for the model or one added token.
struct text_section {
  std::string_view text;
  token_id added_id = -1;  ///< >= 0 when the section is an added token
  bool is_added() const { return added_id >= 0; }
};

/// Leftmost-longest matcher over the added tokens (a byte trie).
class added_token_matcher {
 public:
  added_token_matcher() = default;
  explicit added_token_matcher(const std::vector<added_token>& tokens);

  /// Splits `text` into plain sections and added tokens, applying lstrip / rstrip.
  /// Empty plain sections are dropped.
  std::vector<text_section> split(std::string_view text) const;

 private:
  struct node {
    std::vector<std::pair<unsigned char, std::int32_t>> children;
    std::int32_t token_index = -1;
  };
  std::int32_t child(std::int32_t node_index, unsigned char byte) const;
  /// Length and token index of the longest token starting at `pos` (0 length when none).
  std::pair<std::size_t, std::int32_t> longest_at(std::string_view text, std::size_t pos) const;

  std::vector<node> nodes_;
  std::vector<added_token> tokens_;
  bool can_start_[256] = {};
};

}  // namespace inflight
