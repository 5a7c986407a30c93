#pragma once
/// A cursor over grammar source text (GBNF, regex) shared by the front-ends: peeking,
/// positions for error messages, UTF-8 code points, escapes and {m,n} bounds.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/error.hpp"

namespace inflight {

class text_scanner {
 public:
  explicit text_scanner(std::string_view text) : text_(text) {}

  bool at_end() const { return pos_ >= text_.size(); }
  /// The byte `ahead` positions on, or '\0' past the end.
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  char next() { return text_[pos_++]; }
  void skip(std::size_t n = 1) { pos_ += n; }
  bool starts_with(std::string_view s) const { return text_.substr(pos_).starts_with(s); }
  bool consume(std::string_view s) {
    if (!starts_with(s)) return false;
    pos_ += s.size();
    return true;
  }
  std::size_t mark() const { return pos_; }
  void reset(std::size_t mark) { pos_ = mark; }
  std::size_t pos() const { return pos_; }
  std::size_t size() const { return text_.size(); }
  /// "at line L, column C" of the cursor.
  std::string where() const;
  /// Decodes one UTF-8 code point; nullopt (cursor unmoved) on invalid UTF-8.
  std::optional<std::uint32_t> next_codepoint();

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

/// A backslash escape at the cursor: \n \r \t \f \v \0 \xHH \uHHHH \UHHHHHHHH \u{H...}
/// or a backslash before punctuation (the character itself). \xHH is a code point, as
/// in llama.cpp. Letters and digits with no meaning above are errors.
result<std::uint32_t> parse_escape(text_scanner& s);

struct repeat_bounds {
  std::uint32_t min_count = 0;
  std::optional<std::uint32_t> max_count;
};

/// Deepest nesting of groups a GBNF or regex text may have (the parsers recurse on it).
inline constexpr int max_group_depth = 256;

/// Most a {m,n} bound may say.
inline constexpr std::uint32_t max_repeat_bound = 10000;

/// {m}, {m,}, {m,n} or {,n} at the cursor.
result<repeat_bounds> parse_braces(text_scanner& s);

}  // namespace inflight
