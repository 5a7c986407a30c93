// GBNF (llama.cpp's grammar format) -> grammar.
//
//   root  ::= item ("," ws item)*        # comments run to the end of the line
//   item  ::= [a-z]+ | "\"" [^"\\]* "\"" | "x"{2,4} | .
//
// A rule ends at a newline outside parentheses, unless the next line starts with `|`.
#include <cctype>

#include "core/grammar/front_ends.hpp"
#include "core/grammar/text_scan.hpp"

namespace inflight {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

class gbnf_parser {
 public:
  explicit gbnf_parser(std::string_view src) : s_(src) {}

  result<grammar> parse() {
    skip_space(true);
    while (!s_.at_end()) {
      const std::string name = parse_name();
      if (name.empty()) return fail("expected a rule name");
      skip_space(false);
      if (!s_.consume("::=")) return fail("expected '::=' after rule name '" + name + "'");
      skip_space(true);
      auto body = parse_alternates(false);
      if (!body) return std::unexpected(body.error());
      const std::uint32_t id = b_.rule_named(name);
      if (b_.is_defined(id)) return fail("rule '" + name + "' is defined twice");
      b_.define(id, std::move(*body));
      skip_space(true);
    }
    const auto root = b_.find("root");
    if (!root || !b_.is_defined(*root)) return make_error(errc::invalid_argument, "GBNF grammar has no 'root' rule");
    return b_.build(*root);
  }

 private:
  std::unexpected<error> fail(const std::string& what) const {
    return make_error(errc::invalid_argument, "GBNF " + s_.where() + ": " + what);
  }

  void skip_space(bool is_newline_ok) {
    while (!s_.at_end()) {
      const char c = s_.peek();
      if (c == ' ' || c == '\t') {
        s_.skip();
      } else if (c == '#') {
        while (!s_.at_end() && s_.peek() != '\n' && s_.peek() != '\r') s_.skip();
      } else if ((c == '\n' || c == '\r') && is_newline_ok) {
        s_.skip();
      } else {
        return;
      }
    }
  }

  std::string parse_name() {
    std::string name;
    while (!s_.at_end() && is_name_char(s_.peek())) name += s_.next();
    return name;
  }

  result<gexpr> parse_alternates(bool is_nested) {
    std::vector<gexpr> alts;
    for (;;) {
      auto seq = parse_sequence(is_nested);
      if (!seq) return seq;
      alts.push_back(std::move(*seq));
      skip_space(is_nested);
      if (!is_nested && !s_.at_end() && (s_.peek() == '\n' || s_.peek() == '\r')) {
        // A top-level rule may continue on the next line with `| ...`.
        const auto mark = s_.mark();
        skip_space(true);
        if (s_.at_end() || s_.peek() != '|') {
          s_.reset(mark);
          break;
        }
      }
      if (s_.at_end() || s_.peek() != '|') break;
      s_.skip();
      skip_space(true);
    }
    return g_alt(std::move(alts));
  }

  result<gexpr> parse_sequence(bool is_nested) {
    std::vector<gexpr> items;
    for (;;) {
      skip_space(is_nested);
      if (s_.at_end()) break;
      const char c = s_.peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      auto item = parse_item();
      if (!item) return item;
      auto rep = parse_postfix(std::move(*item));
      if (!rep) return rep;
      items.push_back(std::move(*rep));
    }
    return g_seq(std::move(items));
  }

  result<gexpr> parse_item() {
    const char c = s_.peek();
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      s_.skip();
      return g_codepoints({{0, max_codepoint}}, false);
    }
    if (c == '(') {
      s_.skip();
      skip_space(true);
      if (++depth_ > max_group_depth) return fail("groups nest deeper than " + std::to_string(max_group_depth));
      auto inner = parse_alternates(true);
      --depth_;
      if (!inner) return inner;
      skip_space(true);
      if (!s_.consume(")")) return fail("expected ')'");
      return inner;
    }
    if (c == '<') return fail("token references (<...>) are not supported");
    if (is_name_char(c)) {
      const std::string name = parse_name();
      const auto mark = s_.mark();
      skip_space(false);
      if (s_.starts_with("::=")) return fail("rule '" + name + "' must start on a new line");
      s_.reset(mark);
      return g_ref(b_.rule_named(name));
    }
    return fail(std::string("unexpected character '") + c + "'");
  }

  // Postfix operators may follow a space on the same line, as llama.cpp allows.
  result<gexpr> parse_postfix(gexpr item) {
    for (;;) {
      const auto mark = s_.mark();
      skip_space(false);
      if (s_.at_end() || std::string_view("*+?{").find(s_.peek()) == std::string_view::npos) {
        s_.reset(mark);
        return item;
      }
      const char c = s_.peek();
      if (c == '*') {
        s_.skip();
        item = g_star(std::move(item));
      } else if (c == '+') {
        s_.skip();
        item = g_plus(std::move(item));
      } else if (c == '?') {
        s_.skip();
        item = g_optional(std::move(item));
      } else if (c == '{') {
        auto bounds = parse_braces(s_);
        if (!bounds) return fail(bounds.error().message);
        item = g_repeat(std::move(item), bounds->min_count, bounds->max_count);
      } else {
        return item;
      }
    }
  }

  result<gexpr> parse_literal() {
    s_.skip();  // "
    std::string bytes;
    for (;;) {
      if (s_.at_end()) return fail("unterminated string literal");
      const char c = s_.peek();
      if (c == '"') break;
      if (c == '\\') {
        auto cp = parse_escape(s_);
        if (!cp) return fail(cp.error().message);
        append_utf8(bytes, *cp);
      } else {
        bytes += s_.next();
      }
    }
    s_.skip();
    return g_literal(bytes);
  }

  result<gexpr> parse_class() {
    s_.skip();  // [
    const bool is_negated = s_.consume("^");
    std::vector<codepoint_range> ranges;
    while (!s_.at_end() && s_.peek() != ']') {
      auto lo = parse_class_char();
      if (!lo) return std::unexpected(lo.error());
      std::uint32_t hi = *lo;
      if (s_.peek() == '-' && s_.peek(1) != ']' && s_.peek(1) != '\0') {
        s_.skip();
        auto h = parse_class_char();
        if (!h) return std::unexpected(h.error());
        hi = *h;
        if (hi < *lo) return fail("character range is out of order");
      }
      ranges.push_back({*lo, hi});
    }
    if (!s_.consume("]")) return fail("unterminated character class");
    return g_codepoints(std::move(ranges), is_negated);
  }

  result<std::uint32_t> parse_class_char() {
    if (s_.peek() == '\\') {
      auto cp = parse_escape(s_);
      if (!cp) return fail(cp.error().message);
      return *cp;
    }
    auto cp = s_.next_codepoint();
    if (!cp) return fail("invalid UTF-8");
    return *cp;
  }

  text_scanner s_;
  grammar_builder b_;
  int depth_ = 0;
};

}  // namespace

result<grammar> grammar_from_gbnf(std::string_view text) { return gbnf_parser(text).parse(); }

}  // namespace inflight
