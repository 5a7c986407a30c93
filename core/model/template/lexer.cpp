#include "core/model/template/lexer.hpp"

#include <algorithm>

#include "core/base/codepoints.hpp"

namespace inflight::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int hex_digit(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Jinja reads templates with universal newlines: "\r\n" and "\r" become "\n".
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] != '\r') {
      out += source[i];
    } else {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    }
  }
  return out;
}

/// What the white space after a tag becomes.
enum class after_tag { keep, strip_all, trim_newline };

class lexer {
 public:
  lexer(std::string source, const lex_options& options) : src_(std::move(source)), options_(options) {
    if (!options_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
    for (std::size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  result<std::vector<token>> run() {
    while (pos_ < src_.size()) {
      const std::size_t tag = find_tag(pos_);
      if (tag == std::string::npos) break;
      const char kind = src_[tag + 1];
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      add_text(tag, modifier == '-', kind != '{' && modifier != '+' && options_.lstrip_blocks);
      auto ok = kind == '#' ? skip_comment(tag) : lex_tag(tag, modifier == '-' || modifier == '+' ? 3 : 2);
      if (!ok) return std::unexpected(ok.error());
    }
    add_text(src_.size(), false, false);
    out_.push_back(make_token(token_kind::end, "", src_.size()));
    return std::move(out_);
  }

 private:
  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  token make_token(token_kind kind, std::string text, std::size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const std::size_t line_start = it == line_starts_.begin() ? 0 : *(it - 1);
    return token{kind, std::move(text), static_cast<int>(it - line_starts_.begin()) + 1,
                 static_cast<int>(offset - line_start) + 1};
  }

  std::unexpected<error> error_at(std::size_t offset, const std::string& what) const {
    const token t = make_token(token_kind::end, "", offset);
    return std::unexpected(error{errc::invalid_argument, "template line " + std::to_string(t.line) + ", column " +
                                                             std::to_string(t.column) + ": " + what});
  }

  /// The text [pos_, end) with the white space control of the tags around it.
  void add_text(std::size_t end, bool strip_before_tag, bool lstrip) {
    std::size_t begin = pos_;
    bool line_start = begin == 0;
    if (after_ == after_tag::strip_all) {
      while (begin < end && is_space(src_[begin])) ++begin;
      line_start = begin > pos_ && src_[begin - 1] == '\n';
    } else if (after_ == after_tag::trim_newline && begin < end && src_[begin] == '\n') {
      ++begin;
      line_start = true;
    }
    std::string_view text(src_.data() + begin, end - begin);
    if (strip_before_tag) {
      while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    } else if (lstrip && end < src_.size()) {
      const std::size_t newline = text.rfind('\n');
      const std::size_t line_begin = newline == std::string_view::npos ? 0 : newline + 1;
      const bool blank = text.find_first_not_of(" \t", line_begin) == std::string_view::npos;
      if (blank && (line_begin > 0 || line_start)) text = text.substr(0, line_begin);
    }
    if (!text.empty()) out_.push_back(make_token(token_kind::text, std::string(text), begin));
    after_ = after_tag::keep;
  }

  result<void> skip_comment(std::size_t tag) {
    const std::size_t close = src_.find("#}", tag + 2);
    if (close == std::string::npos) return error_at(tag, "unterminated comment");
    set_after(src_[close - 1], true);
    pos_ = close + 2;
    return {};
  }

  void set_after(char modifier, bool is_block) {
    if (modifier == '-') after_ = after_tag::strip_all;
    else if (is_block && modifier != '+' && options_.trim_blocks) after_ = after_tag::trim_newline;
    else after_ = after_tag::keep;
  }

  /// Where the tag's closing delimiter starts at `p` (after an optional - or +), or npos.
  bool is_close(std::size_t p, char kind) const {
    const char close = kind == '{' ? '}' : '%';
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    return p + 1 < src_.size() && src_[p] == close && src_[p + 1] == '}';
  }

  result<void> lex_tag(std::size_t tag, std::size_t open_length) {
    const char kind = src_[tag + 1];
    const std::size_t first = out_.size();
    out_.push_back(make_token(kind == '{' ? token_kind::expr_open : token_kind::stmt_open, "", tag));
    std::size_t p = tag + open_length;
    std::vector<std::size_t> open_brackets;  // a }} inside {{ {'a': {'b': 1}} }} closes a dict, not the tag
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size() && !open_brackets.empty()) {
        return error_at(open_brackets.back(), std::string("'") + src_[open_brackets.back()] + "' is never closed");
      }
      if (p >= src_.size()) return error_at(tag, "unterminated tag");
      if (open_brackets.empty() && is_close(p, kind)) break;
      auto ok = lex_token(p, open_brackets);
      if (!ok) return ok;
    }
    const char modifier = src_[p] == '-' || src_[p] == '+' ? src_[p] : '\0';
    out_.push_back(make_token(kind == '{' ? token_kind::expr_close : token_kind::stmt_close, "", p));
    set_after(modifier, kind == '%');
    pos_ = p + (modifier ? 3 : 2);
    if (kind == '%' && out_.size() == first + 3 && out_[first + 1].kind == token_kind::name &&
        out_[first + 1].text == "raw") {
      out_.resize(first);
      return lex_raw(tag);
    }
    return {};
  }

  /// After `{% raw %}`: everything up to `{% endraw %}` is text.
  result<void> lex_raw(std::size_t tag) {
    for (std::size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 1)) {
      std::size_t p = i + 2;
      const char modifier = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : '\0';
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p += 6;
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (!is_close(p, '%')) continue;
      add_text(i, modifier == '-', modifier != '+' && options_.lstrip_blocks);
      const char close_modifier = src_[p] == '-' || src_[p] == '+' ? src_[p] : '\0';
      set_after(close_modifier, true);
      pos_ = p + (close_modifier ? 3 : 2);
      return {};
    }
    return error_at(tag, "{% raw %} without {% endraw %}");
  }

  result<void> lex_token(std::size_t& p, std::vector<std::size_t>& open_brackets) {
    const char c = src_[p];
    const std::size_t start = p;
    if (is_name_start(c)) {
      while (p < src_.size() && is_name_char(src_[p])) ++p;
      out_.push_back(make_token(token_kind::name, src_.substr(start, p - start), start));
      return {};
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static constexpr std::string_view two_char_ops[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : two_char_ops) {
      if (src_.compare(p, 2, op) == 0) {
        out_.push_back(make_token(token_kind::op, std::string(op), start));
        p += 2;
        return {};
      }
    }
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
      return error_at(p, std::string("unexpected character '") + c + "' in a tag");
    }
    if (c == '(' || c == '[' || c == '{') open_brackets.push_back(p);
    if (c == ')' || c == ']' || c == '}') {
      if (open_brackets.empty()) return error_at(p, std::string("unexpected '") + c + "'");
      const char open = src_[open_brackets.back()];
      const char expected = open == '(' ? ')' : open == '[' ? ']' : '}';
      if (c != expected) return error_at(p, std::string("unexpected '") + c + "', expected '" + expected + "'");
      open_brackets.pop_back();
    }
    out_.push_back(make_token(token_kind::op, std::string(1, c), start));
    ++p;
    return {};
  }

  result<void> lex_number(std::size_t& p) {
    const std::size_t start = p;
    while (p < src_.size() && is_digit(src_[p])) ++p;
    if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      ++p;
      while (p < src_.size() && is_digit(src_[p])) ++p;
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      std::size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        p = q;
        while (p < src_.size() && is_digit(src_[p])) ++p;
      }
    }
    out_.push_back(make_token(token_kind::number, src_.substr(start, p - start), start));
    return {};
  }

  /// Python's string escapes: \n \t \r \b \f \v \0 \\ \' \" \xNN \uNNNN \UNNNNNNNN;
  /// any other backslash is kept as written.
  result<void> lex_string(std::size_t& p) {
    const std::size_t start = p;
    const char quote = src_[p++];
    std::string text;
    while (p < src_.size() && src_[p] != quote) {
      if (src_[p] != '\\' || p + 1 >= src_.size()) {
        text += src_[p++];
        continue;
      }
      auto ok = read_escape(p, text);
      if (!ok) return ok;
    }
    if (p >= src_.size()) return error_at(start, "unterminated string");
    ++p;
    out_.push_back(make_token(token_kind::string, std::move(text), start));
    return {};
  }

  result<void> read_escape(std::size_t& p, std::string& text) {
    const char e = src_[p + 1];
    static constexpr std::string_view simple_from = "ntrbfv0\\'\"\n";
    static constexpr char simple_to_chars[] = "\n\t\r\b\f\v\0\\'\"";
    static constexpr std::string_view simple_to(simple_to_chars, sizeof simple_to_chars - 1);
    if (const std::size_t i = simple_from.find(e); i != std::string_view::npos) {
      if (e != '\n') text += simple_to[i];  // a backslash before a newline joins the lines
      p += 2;
      return {};
    }
    const int num_hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (num_hex == 0) {
      text += src_[p++];  // unknown escape: the backslash stays
      return {};
    }
    char32_t cp = 0;
    for (int i = 0; i < num_hex; ++i) {
      const std::size_t q = p + 2 + static_cast<std::size_t>(i);
      const int d = q < src_.size() ? hex_digit(src_[q]) : -1;
      if (d < 0) return error_at(p, "truncated \\" + std::string(1, e) + " escape in a string");
      cp = cp * 16 + static_cast<char32_t>(d);
    }
    if (cp > 0x10FFFF) return error_at(p, "\\U escape beyond U+10FFFF");
    append_utf8(text, cp);
    p += 2 + static_cast<std::size_t>(num_hex);
    return {};
  }

  std::string src_;
  lex_options options_;
  std::vector<std::size_t> line_starts_;
  std::vector<token> out_;
  std::size_t pos_ = 0;
  after_tag after_ = after_tag::keep;
};

}  // namespace

result<std::vector<token>> try_lex(std::string_view source, const lex_options& options) {
  return lexer(normalize_newlines(source), options).run();
}

}  // namespace inflight::jinja
