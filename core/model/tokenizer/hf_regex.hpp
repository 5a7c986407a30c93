#pragma once
/// PCRE2 (UTF + Unicode properties) regexes for tokenizer.json Split / Replace patterns.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/error.hpp"

namespace inflight {

/// A compiled tokenizer.json regex. Patterns are rewritten so that `\s` means the
/// ECMAScript white space set and `(?i:'s|'t|...)` folds ASCII case only, the reading
/// the Hugging Face tokenizer ports agree on.
class hf_regex {
 public:
  /// Compiles `pattern`; a syntax error is errc::corrupt_file naming the pattern.
  static result<hf_regex> try_compile(std::string_view pattern);

  /// Byte ranges [begin, end) of all non-overlapping matches, left to right.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  /// The PCRE2 pattern actually compiled (after the rewrite).
  const std::string& pattern() const { return pattern_; }

 private:
  struct code_deleter {
    void operator()(void* code) const;
  };
  std::string pattern_;
  std::shared_ptr<void> code_;
};

/// The rewrite applied by try_compile, exposed for tests.
std::string rewrite_hf_pattern(std::string_view pattern);

}  // namespace inflight
