// JSON text expressions for the JSON Schema front-end: strings, numbers, integer ranges.
#include <algorithm>
#include <string>

#include "core/grammar/json_schema_internal.hpp"

namespace inflight::json_text {
namespace {

gexpr digit() { return g_bytes(byte_set::range('0', '9')); }
gexpr nonzero_digit() { return g_bytes(byte_set::range('1', '9')); }
gexpr digits(std::uint32_t n) { return g_repeat(digit(), n, n); }

gexpr hex_digits(std::uint32_t n) {
  byte_set hex = byte_set::range('0', '9');
  hex |= byte_set::range('a', 'f');
  hex |= byte_set::range('A', 'F');
  return g_repeat(g_bytes(hex), n, n);
}

gexpr bytes_of(std::string_view chars) {
  byte_set s;
  for (char c : chars) s.add(static_cast<std::uint8_t>(c));
  return g_bytes(s);
}

// \uXXXX other than a surrogate, or a high+low surrogate pair.
gexpr unicode_escape() {
  gexpr plain = g_alt({g_seq({bytes_of("0123456789ABCabc"), hex_digits(3)}),
                       g_seq({bytes_of("Dd"), bytes_of("01234567"), hex_digits(2)}),
                       g_seq({bytes_of("EFef"), hex_digits(3)})});
  gexpr pair = g_seq({bytes_of("Dd"), bytes_of("89ABab"), hex_digits(2), g_literal("\\u"), bytes_of("Dd"),
                      bytes_of("CDEFcdef"), hex_digits(2)});
  return g_alt({std::move(plain), std::move(pair)});
}

std::string escape_of(std::uint8_t b) {
  switch (b) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  static const char* hex = "0123456789abcdef";
  return std::string("\\u00") + hex[b >> 4] + hex[b & 15];
}

bool needs_escape(std::uint8_t b) { return b == '"' || b == '\\' || b < 0x20; }

// Numbers with `len` digits between x and y (decimal strings of that length).
gexpr same_length_range(const std::string& x, const std::string& y) {
  const std::size_t n = x.size();
  if (n == 1) return g_bytes(byte_set::range(static_cast<std::uint8_t>(x[0]), static_cast<std::uint8_t>(y[0])));
  if (x[0] == y[0]) return g_seq({g_byte(static_cast<std::uint8_t>(x[0])), same_length_range(x.substr(1), y.substr(1))});
  const std::string zeros(n - 1, '0');
  const std::string nines(n - 1, '9');
  if (x.substr(1) == zeros && y.substr(1) == nines)
    return g_seq({g_bytes(byte_set::range(static_cast<std::uint8_t>(x[0]), static_cast<std::uint8_t>(y[0]))),
                  digits(static_cast<std::uint32_t>(n - 1))});
  std::vector<gexpr> alts;
  alts.push_back(g_seq({g_byte(static_cast<std::uint8_t>(x[0])), same_length_range(x.substr(1), nines)}));
  if (x[0] + 1 <= y[0] - 1)
    alts.push_back(g_seq({g_bytes(byte_set::range(static_cast<std::uint8_t>(x[0] + 1), static_cast<std::uint8_t>(y[0] - 1))),
                          digits(static_cast<std::uint32_t>(n - 1))}));
  alts.push_back(g_seq({g_byte(static_cast<std::uint8_t>(y[0])), same_length_range(zeros, y.substr(1))}));
  return g_alt(std::move(alts));
}

std::uint64_t pow10(std::size_t n) {
  std::uint64_t p = 1;
  for (std::size_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Natural numbers a <= n <= b (b absent: unbounded), without leading zeros.
gexpr natural_range(std::uint64_t a, std::optional<std::uint64_t> b) {
  const std::size_t len_a = std::to_string(a).size();
  std::vector<gexpr> alts;
  const std::size_t len_b = b ? std::to_string(*b).size() : len_a;
  for (std::size_t len = len_a; len <= len_b; ++len) {
    const std::uint64_t lo = std::max<std::uint64_t>(a, len == 1 ? 0 : pow10(len - 1));
    const std::uint64_t hi = b ? std::min<std::uint64_t>(*b, pow10(len) - 1) : pow10(len) - 1;
    if (lo <= hi) alts.push_back(same_length_range(std::to_string(lo), std::to_string(hi)));
  }
  if (!b) alts.push_back(g_seq({nonzero_digit(), g_repeat(digit(), static_cast<std::uint32_t>(len_a), std::nullopt)}));
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(alts);
  return e.items.size() == 1 ? std::move(e.items[0]) : e;
}

gexpr any_fraction() { return g_optional(g_seq({g_byte('.'), g_plus(digit())})); }
gexpr zero_fraction() { return g_optional(g_seq({g_byte('.'), g_plus(g_byte('0'))})); }
gexpr nonzero_fraction() {
  return g_seq({g_byte('.'), g_star(digit()), nonzero_digit(), g_star(digit())});
}

// Magnitudes m written "I" or "I.F" with a <= m <= b (exclusive where flagged).
gexpr magnitude_range(std::uint64_t a, bool a_excl, std::optional<std::uint64_t> b, bool b_excl) {
  std::vector<gexpr> alts;
  std::uint64_t start = a;
  if (a_excl) {
    if (!b || a < *b) alts.push_back(g_seq({natural_range(a, a), nonzero_fraction()}));
    start = a + 1;
  }
  if (!b) {
    alts.push_back(g_seq({natural_range(start, std::nullopt), any_fraction()}));
  } else {
    if (*b >= 1 && start <= *b - 1) alts.push_back(g_seq({natural_range(start, *b - 1), any_fraction()}));
    if (!b_excl && start <= *b) alts.push_back(g_seq({natural_range(*b, *b), zero_fraction()}));
  }
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(alts);
  return e.items.size() == 1 ? std::move(e.items[0]) : e;
}

std::uint64_t magnitude(std::int64_t v) { return v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v); }

}  // namespace

gexpr separator_space() { return g_optional(g_byte(' ')); }

gexpr string_char() {
  std::vector<codepoint_range> excluded{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  gexpr plain = g_codepoints(excluded, true);
  gexpr escape = g_seq({g_byte('\\'), g_alt({bytes_of("\"\\/bfnrt"), g_seq({g_byte('u'), unicode_escape()})})});
  return g_alt({std::move(plain), std::move(escape)});
}

namespace {

// Decodes valid UTF-8 (names come from a parsed JSON document).
std::vector<std::uint32_t> codepoints_of(const std::string& s) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    std::uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + static_cast<std::size_t>(k) < s.size(); ++k)
      cp = (cp << 6) | (static_cast<std::uint8_t>(s[i + static_cast<std::size_t>(k)]) & 0x3F);
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

// One canonical key character other than `excluded`: a plain code point, \" or \\.
gexpr key_char_except(const std::vector<std::uint32_t>& excluded) {
  std::vector<codepoint_range> not_plain{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  for (auto cp : excluded) not_plain.push_back({cp, cp});
  std::vector<gexpr> alts{g_codepoints(std::move(not_plain), true)};
  auto is_excluded = [&](std::uint32_t cp) { return std::find(excluded.begin(), excluded.end(), cp) != excluded.end(); };
  if (!is_excluded('"')) alts.push_back(g_literal("\\\""));
  if (!is_excluded('\\')) alts.push_back(g_literal("\\\\"));
  return g_alt(std::move(alts));
}

struct name_trie {
  struct node {
    bool is_name = false;
    std::vector<std::pair<std::uint32_t, std::size_t>> children;
  };
  std::vector<node> nodes{node{}};

  void insert(const std::vector<std::uint32_t>& cps) {
    std::size_t cur = 0;
    for (auto cp : cps) {
      std::size_t next = 0;
      for (auto [c, child] : nodes[cur].children)
        if (c == cp) next = child;
      if (next == 0) {
        next = nodes.size();
        nodes[cur].children.push_back({cp, next});
        nodes.emplace_back();
      }
      cur = next;
    }
    nodes[cur].is_name = true;
  }
};

// Strings (content only) that are not a name below trie node `n`:
//   "" unless n ends a name | c + not_in(child c) | another character + anything.
gexpr not_in(const name_trie& trie, std::size_t n) {
  const auto& node = trie.nodes[n];
  std::vector<gexpr> alts;
  if (!node.is_name) alts.push_back(g_seq({}));
  std::vector<std::uint32_t> excluded;
  for (auto [cp, child] : node.children) {
    excluded.push_back(cp);
    gexpr spelled = cp == '"' ? g_literal("\\\"") : cp == '\\' ? g_literal("\\\\") : g_codepoints({{cp, cp}}, false);
    alts.push_back(g_seq({std::move(spelled), not_in(trie, child)}));
  }
  alts.push_back(g_seq({key_char_except(excluded), g_star(key_char_except({}))}));
  return g_alt(std::move(alts));
}

}  // namespace

gexpr string_not_in(const std::vector<std::string>& names) {
  name_trie trie;
  for (const auto& name : names) {
    const auto cps = codepoints_of(name);
    // A name with a control character can never be written as a canonical key anyway.
    if (std::none_of(cps.begin(), cps.end(), [](std::uint32_t cp) { return cp < 0x20; })) trie.insert(cps);
  }
  return g_seq({g_byte('"'), not_in(trie, 0), g_byte('"')});
}

gexpr string_of_length(std::uint32_t min_count, std::optional<std::uint32_t> max_count) {
  return g_seq({g_byte('"'), g_repeat(string_char(), min_count, max_count), g_byte('"')});
}

gexpr string_of_length(grammar_builder& b, std::uint32_t min_count, std::optional<std::uint32_t> max_count) {
  return g_seq({g_byte('"'), counted(b, string_char(), min_count, max_count, "string_chars"), g_byte('"')});
}

// Rewrites byte sets that hold '"', '\\' or controls into alternatives with their escapes.
static gexpr escape_content(const gexpr& e) {
  if (e.kind == gexpr_kind::bytes) {
    byte_set plain;
    std::vector<gexpr> alts;
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<std::uint8_t>(b);
      if (!e.bytes.contains(byte)) continue;
      if (needs_escape(byte))
        alts.push_back(g_literal(escape_of(byte)));
      else
        plain.add(byte);
    }
    if (alts.empty()) return e;
    if (!plain.is_empty()) alts.insert(alts.begin(), g_bytes(plain));
    return g_alt(std::move(alts));
  }
  gexpr out = e;
  for (auto& item : out.items) item = escape_content(item);
  return out;
}

gexpr string_with_content(const gexpr& content) {
  return g_seq({g_byte('"'), escape_content(content), g_byte('"')});
}

gexpr number() {
  gexpr integer_part = g_alt({g_byte('0'), g_seq({nonzero_digit(), g_star(digit())})});
  gexpr exponent = g_optional(g_seq({bytes_of("eE"), g_optional(bytes_of("+-")), g_plus(digit())}));
  return g_seq({g_optional(g_byte('-')), std::move(integer_part), any_fraction(), std::move(exponent)});
}

gexpr integer_range(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi) {
  std::vector<gexpr> alts;
  // n >= 0
  if (!hi || *hi >= 0) {
    const std::uint64_t a = lo && *lo > 0 ? static_cast<std::uint64_t>(*lo) : 0;
    std::optional<std::uint64_t> b;
    if (hi) b = static_cast<std::uint64_t>(*hi);
    alts.push_back(natural_range(a, b));
  }
  // n < 0, written "-" and its magnitude
  if (!lo || *lo < 0) {
    const std::uint64_t a = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<std::uint64_t> b;
    if (lo) b = magnitude(*lo);
    alts.push_back(g_seq({g_byte('-'), natural_range(a, b)}));
  }
  return g_alt(std::move(alts));
}

gexpr bounded_number(std::optional<number_bound> lo, std::optional<number_bound> hi) {
  std::vector<gexpr> alts;
  // v >= 0, no sign
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->is_exclusive)) {
    const bool lo_nonneg = lo && lo->value >= 0;
    const std::uint64_t a = lo_nonneg ? static_cast<std::uint64_t>(lo->value) : 0;
    std::optional<std::uint64_t> b;
    if (hi) b = static_cast<std::uint64_t>(hi->value);
    alts.push_back(magnitude_range(a, lo_nonneg && lo->is_exclusive, b, hi && hi->is_exclusive));
  }
  // v < 0: "-" and a magnitude m > 0 (m = -v)
  if (!lo || lo->value < 0) {
    const bool hi_neg = hi && hi->value < 0;
    const std::uint64_t a = hi_neg ? magnitude(hi->value) : 0;
    std::optional<std::uint64_t> b;
    if (lo) b = magnitude(lo->value);
    alts.push_back(g_seq({g_byte('-'), magnitude_range(a, hi_neg ? hi->is_exclusive : true, b, lo && lo->is_exclusive)}));
  }
  // "-0" (and "-0.0") is zero too.
  const bool lo_admits_zero = !lo || lo->value < 0 || (lo->value == 0 && !lo->is_exclusive);
  const bool hi_admits_zero = !hi || hi->value > 0 || (hi->value == 0 && !hi->is_exclusive);
  if (lo_admits_zero && hi_admits_zero) alts.push_back(g_seq({g_literal("-0"), zero_fraction()}));
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(alts);
  return e.items.size() == 1 ? std::move(e.items[0]) : e;
}

}  // namespace inflight::json_text
