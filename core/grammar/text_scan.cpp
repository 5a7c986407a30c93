#include "core/grammar/text_scan.hpp"

#include <cctype>

namespace inflight {
namespace {

std::optional<std::uint32_t> hex_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<std::uint32_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<std::uint32_t>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<std::uint32_t>(c - 'A' + 10);
  return std::nullopt;
}

result<std::uint32_t> parse_hex(text_scanner& s, int num_digits) {
  std::uint32_t v = 0;
  for (int i = 0; i < num_digits; ++i) {
    auto h = hex_value(s.peek());
    if (!h) return make_error(errc::invalid_argument, "expected " + std::to_string(num_digits) + " hex digits");
    v = v * 16 + *h;
    s.skip();
  }
  return v;
}

std::optional<std::uint32_t> parse_number(text_scanner& s) {
  if (!std::isdigit(static_cast<unsigned char>(s.peek()))) return std::nullopt;
  std::uint64_t v = 0;
  while (std::isdigit(static_cast<unsigned char>(s.peek()))) {
    v = v * 10 + static_cast<std::uint64_t>(s.next() - '0');
    if (v > 0xFFFFFFFFull) v = 0xFFFFFFFFull;
  }
  return static_cast<std::uint32_t>(v);
}

}  // namespace

std::string text_scanner::where() const {
  std::size_t line = 1;
  std::size_t col = 1;
  for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "at line " + std::to_string(line) + ", column " + std::to_string(col);
}

std::optional<std::uint32_t> text_scanner::next_codepoint() {
  const auto b0 = static_cast<std::uint8_t>(peek());
  if (at_end()) return std::nullopt;
  int n = 0;
  std::uint32_t cp = 0;
  if (b0 < 0x80) {
    n = 1;
    cp = b0;
  } else if ((b0 & 0xE0) == 0xC0 && b0 >= 0xC2) {
    n = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return std::nullopt;
  }
  if (pos_ + static_cast<std::size_t>(n) > text_.size()) return std::nullopt;
  for (int i = 1; i < n; ++i) {
    const auto b = static_cast<std::uint8_t>(text_[pos_ + static_cast<std::size_t>(i)]);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  const bool is_overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (is_overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  pos_ += static_cast<std::size_t>(n);
  return cp;
}

result<std::uint32_t> parse_escape(text_scanner& s) {
  s.skip();  // backslash
  if (s.at_end()) return make_error(errc::invalid_argument, "escape at end of text");
  const char c = s.next();
  switch (c) {
    case 'n': return 0x0Au;
    case 'r': return 0x0Du;
    case 't': return 0x09u;
    case 'f': return 0x0Cu;
    case 'v': return 0x0Bu;
    case '0': return 0x00u;
    case 'x': return parse_hex(s, 2);
    case 'U': {
      auto v = parse_hex(s, 8);
      if (v && *v > 0x10FFFF) return make_error(errc::invalid_argument, "\\U escape beyond U+10FFFF");
      return v;
    }
    case 'u': {
      if (!s.consume("{")) return parse_hex(s, 4);
      std::uint32_t v = 0;
      int num_digits = 0;
      while (auto h = hex_value(s.peek())) {
        v = v * 16 + *h;
        s.skip();
        if (++num_digits > 6) return make_error(errc::invalid_argument, "\\u{...} has too many digits");
      }
      if (num_digits == 0 || !s.consume("}") || v > 0x10FFFF)
        return make_error(errc::invalid_argument, "malformed \\u{...} escape");
      return v;
    }
    default:
      break;
  }
  if (std::isalnum(static_cast<unsigned char>(c)))
    return make_error(errc::invalid_argument, std::string("unknown escape '\\") + c + "'");
  if (static_cast<unsigned char>(c) >= 0x80) {
    s.reset(s.pos() - 1);
    auto cp = s.next_codepoint();
    if (!cp) return make_error(errc::invalid_argument, "invalid UTF-8 after backslash");
    return *cp;
  }
  return static_cast<std::uint32_t>(static_cast<unsigned char>(c));
}

result<repeat_bounds> parse_braces(text_scanner& s) {
  s.skip();  // {
  repeat_bounds r;
  auto lo = parse_number(s);
  if (s.consume("}")) {
    if (!lo) return make_error(errc::invalid_argument, "empty repetition bounds {}");
    r.min_count = *lo;
    r.max_count = *lo;
  } else {
    if (!s.consume(",")) return make_error(errc::invalid_argument, "malformed repetition bounds");
    r.min_count = lo.value_or(0);
    auto hi = parse_number(s);
    if (!s.consume("}")) return make_error(errc::invalid_argument, "malformed repetition bounds");
    if (hi) r.max_count = *hi;
    if (!lo && !hi) return make_error(errc::invalid_argument, "empty repetition bounds {,}");
  }
  if (r.max_count && *r.max_count < r.min_count)
    return make_error(errc::invalid_argument, "repetition bounds are out of order");
  if (r.min_count > max_repeat_bound || r.max_count.value_or(0) > max_repeat_bound)
    return make_error(errc::invalid_argument,
                      "repetition bound over " + std::to_string(max_repeat_bound) + " is not supported");
  return r;
}

}  // namespace inflight
