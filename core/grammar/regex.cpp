// Regular expressions (a practical subset) -> grammar. The pattern matches the whole
// output: a leading ^ and a trailing $ are accepted and change nothing.
//
//   alternation a|b, groups (...) (?:...) (?<name>...) (?P<name>...), classes [a-z] [^...],
//   . (any character but \n), \d \w \s \D \W \S, escapes, quantifiers * + ? {m} {m,} {m,n}
//   (a lazy ? suffix is accepted: it matches the same strings).
//   Refused: backreferences, lookaround, \b \B, \p{...}, possessive quantifiers, inline flags.
#include <algorithm>

#include "core/grammar/front_ends.hpp"
#include "core/grammar/text_scan.hpp"

namespace inflight {
namespace {

using ranges_t = std::vector<codepoint_range>;

ranges_t digit_ranges() { return {{'0', '9'}}; }
ranges_t word_ranges() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
ranges_t space_ranges() { return {{'\t', '\r'}, {' ', ' '}}; }

ranges_t complement(const ranges_t& in) {
  ranges_t sorted = in;
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.lo < b.lo; });
  ranges_t out;
  std::uint32_t next = 0;
  for (auto r : sorted) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = std::max(next, r.hi + 1);
  }
  if (next <= max_codepoint) out.push_back({next, max_codepoint});
  return out;
}

class regex_parser {
 public:
  explicit regex_parser(std::string_view pattern) : s_(pattern) {}

  result<gexpr> parse() {
    auto e = parse_alternation();
    if (!e) return e;
    if (!s_.at_end()) return fail(s_.peek() == ')' ? "unbalanced ')'" : "unexpected character");
    return e;
  }

 private:
  std::unexpected<error> fail(const std::string& what) const {
    return make_error(errc::invalid_argument, "regex error at offset " + std::to_string(s_.pos()) + ": " + what);
  }

  result<gexpr> parse_alternation() {
    std::vector<gexpr> alts;
    for (;;) {
      auto seq = parse_sequence();
      if (!seq) return seq;
      alts.push_back(std::move(*seq));
      if (!s_.consume("|")) break;
    }
    return g_alt(std::move(alts));
  }

  // ^ and $ are allowed where they change nothing under a whole-output match: at the
  // start and the end of a top-level alternative.
  bool is_leading_caret(bool is_first) const { return depth_ == 0 && is_first && s_.peek() == '^'; }
  bool is_trailing_dollar() const {
    return depth_ == 0 && s_.peek() == '$' && (s_.pos() + 1 == s_.size() || s_.peek(1) == '|');
  }

  result<gexpr> parse_sequence() {
    std::vector<gexpr> items;
    bool is_first = true;
    while (!s_.at_end() && s_.peek() != '|' && s_.peek() != ')') {
      if (is_leading_caret(is_first) || is_trailing_dollar()) {
        s_.skip();
        is_first = false;
        continue;
      }
      is_first = false;
      auto atom = parse_atom();
      if (!atom) return atom;
      auto rep = parse_quantifiers(std::move(*atom));
      if (!rep) return rep;
      items.push_back(std::move(*rep));
    }
    return g_seq(std::move(items));
  }

  result<gexpr> parse_atom() {
    const char c = s_.peek();
    switch (c) {
      case '(': return parse_group();
      case '[': return parse_class();
      case '.':
        s_.skip();
        return g_codepoints({{'\n', '\n'}}, true);
      case '^': return fail("'^' is only supported at the start of the pattern (or of a top-level alternative)");
      case '$': return fail("'$' is only supported at the end of the pattern (or of a top-level alternative)");
      case '*':
      case '+':
      case '?':
        return fail("nothing to repeat");
      case '{':
        return fail("'{' must follow something to repeat (write \\{ for the character)");
      case '\\': return parse_escape_atom();
      default: {
        auto cp = s_.next_codepoint();
        if (!cp) return fail("invalid UTF-8");
        std::string bytes;
        append_utf8(bytes, *cp);
        return g_literal(bytes);
      }
    }
  }

  result<gexpr> parse_group() {
    s_.skip();
    if (s_.consume("?")) {
      if (s_.consume(":")) {
      } else if (s_.starts_with("=") || s_.starts_with("!") || s_.starts_with("<=") || s_.starts_with("<!")) {
        return fail("lookaround assertions are not supported");
      } else if (s_.consume("P<") || s_.consume("<")) {
        while (!s_.at_end() && s_.peek() != '>') s_.skip();
        if (!s_.consume(">")) return fail("unterminated group name");
      } else {
        return fail("inline flags and other (?...) groups are not supported");
      }
    }
    if (++depth_ > max_group_depth) return fail("groups nest deeper than " + std::to_string(max_group_depth));
    auto inner = parse_alternation();
    --depth_;
    if (!inner) return inner;
    if (!s_.consume(")")) return fail("missing ')'");
    return inner;
  }

  // \d \w \s and their negations as code point ranges; nullopt for other escapes.
  std::optional<ranges_t> class_escape(char c) {
    switch (c) {
      case 'd': return digit_ranges();
      case 'w': return word_ranges();
      case 's': return space_ranges();
      case 'D': return complement(digit_ranges());
      case 'W': return complement(word_ranges());
      case 'S': return complement(space_ranges());
      default: return std::nullopt;
    }
  }

  std::optional<std::string> refused_escape(char c) {
    if (c >= '1' && c <= '9') return "backreferences are not supported";
    if (c == 'k') return "named backreferences are not supported";
    if (c == 'b' || c == 'B') return "word boundaries (\\b, \\B) are not supported";
    if (c == 'p' || c == 'P') return "Unicode property classes (\\p{...}) are not supported";
    if (c == 'A' || c == 'z' || c == 'Z' || c == 'G') return "anchors other than a leading ^ and a trailing $ are not supported";
    return std::nullopt;
  }

  result<gexpr> parse_escape_atom() {
    const char c = s_.peek(1);
    if (auto ranges = class_escape(c)) {
      s_.skip(2);
      return g_codepoints(std::move(*ranges), false);
    }
    if (auto why = refused_escape(c)) return fail(*why);
    auto cp = parse_escape(s_);
    if (!cp) return fail(cp.error().message);
    std::string bytes;
    append_utf8(bytes, *cp);
    return g_literal(bytes);
  }

  result<gexpr> parse_class() {
    s_.skip();
    const bool is_negated = s_.consume("^");
    ranges_t ranges;
    bool is_first = true;
    while (!s_.at_end() && (s_.peek() != ']' || is_first)) {
      is_first = false;
      if (s_.peek() == '[' && s_.peek(1) == ':') return fail("POSIX classes ([:alpha:]) are not supported");
      if (s_.peek() == '\\') {
        if (auto r = class_escape(s_.peek(1))) {
          s_.skip(2);
          ranges.insert(ranges.end(), r->begin(), r->end());
          continue;
        }
        if (s_.peek(1) == 'b') {  // backspace inside a class
          s_.skip(2);
          ranges.push_back({8, 8});
          continue;
        }
      }
      auto lo = class_char();
      if (!lo) return std::unexpected(lo.error());
      std::uint32_t hi = *lo;
      if (s_.peek() == '-' && s_.peek(1) != ']' && s_.pos() + 1 < s_.size()) {
        s_.skip();
        auto h = class_char();
        if (!h) return std::unexpected(h.error());
        hi = *h;
        if (hi < *lo) return fail("character range is out of order");
      }
      ranges.push_back({*lo, hi});
    }
    if (!s_.consume("]")) return fail("unterminated character class");
    return g_codepoints(std::move(ranges), is_negated);
  }

  result<std::uint32_t> class_char() {
    if (s_.peek() == '\\') {
      if (auto why = refused_escape(s_.peek(1)); why && s_.peek(1) != 'b') return fail(*why);
      auto cp = parse_escape(s_);
      if (!cp) return fail(cp.error().message);
      return *cp;
    }
    auto cp = s_.next_codepoint();
    if (!cp) return fail("invalid UTF-8");
    return *cp;
  }

  // Quantifiers stack (`(a|b)?{2}`). An unbounded repetition of an unbounded repetition,
  // `a**`, `(a*)*` or `(a+)+`, is one repetition: the same strings, without the nested
  // ambiguity that makes the parser's work grow with the cube of the text.
  result<gexpr> parse_quantifiers(gexpr atom) {
    for (;;) {
      const char c = s_.peek();
      std::uint32_t lo = 0;
      std::optional<std::uint32_t> hi;
      if (c == '*') {
        s_.skip();
      } else if (c == '+') {
        s_.skip();
        lo = 1;
      } else if (c == '?') {
        s_.skip();
        hi = 1;
      } else if (c == '{') {
        auto bounds = parse_braces(s_);
        if (!bounds) return fail(bounds.error().message);
        lo = bounds->min_count;
        hi = bounds->max_count;
      } else {
        return atom;
      }
      if (s_.peek() == '+') return fail("possessive quantifiers are not supported");
      s_.consume("?");  // lazy: the same strings match
      if (!hi && atom.kind == gexpr_kind::repeat && !atom.max_count && (lo >= 1 || atom.min_count <= 1)) {
        // (x{a,}){b,}: x{a*b,} for b >= 1 (a run of n >= a*b splits into b runs of >= a);
        // (x{0,}){0,} and (x{1,}){0,}: x{0,}.
        const std::uint64_t merged = lo == 0 ? 0 : std::uint64_t(atom.min_count) * lo;
        if (merged <= UINT32_MAX) {
          atom.min_count = static_cast<std::uint32_t>(merged);
          continue;
        }
      }
      atom = g_repeat(std::move(atom), lo, hi);
    }
  }

  text_scanner s_;
  int depth_ = 0;
};

}  // namespace

result<gexpr> regex_to_gexpr(std::string_view pattern) { return regex_parser(pattern).parse(); }

result<grammar> grammar_from_regex(std::string_view pattern) {
  auto e = regex_to_gexpr(pattern);
  if (!e) return std::unexpected(e.error());
  grammar_builder b;
  const std::uint32_t root = b.declare("root");
  b.define(root, std::move(*e));
  return b.build(root);
}

result<grammar> grammar_from_choices(std::span<const std::string> choices) {
  if (choices.empty()) return make_error(errc::invalid_argument, "a choice list needs at least one choice");
  std::vector<gexpr> alts;
  for (const auto& c : choices) alts.push_back(g_literal(c));
  grammar_builder b;
  const std::uint32_t root = b.declare("root");
  gexpr body;
  body.kind = gexpr_kind::alt;
  body.items = std::move(alts);
  b.define(root, std::move(body));
  return b.build(root);
}

}  // namespace inflight
