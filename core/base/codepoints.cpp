#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

constexpr char32_t replacement_char = 0xFFFD;

/// Decodes one character at `pos`; sets `len` to the bytes consumed (1 for an invalid byte).
char32_t decode_one(std::string_view text, std::size_t pos, std::size_t& len) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  len = 1;
  if (lead < 0x80) return lead;
  std::size_t need = utf8_char_length(lead);
  if (need == 1 || pos + need > text.size()) return replacement_char;
  char32_t cp = lead & (0x7F >> need);
  for (std::size_t i = 1; i < need; ++i) {
    const auto c = static_cast<unsigned char>(text[pos + i]);
    if ((c & 0xC0) != 0x80) return replacement_char;
    cp = (cp << 6) | (c & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  static constexpr char32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_for_length[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return replacement_char;
  len = need;
  return cp;
}

}  // namespace

std::u32string to_codepoints(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t pos = 0, len = 0; pos < text.size(); pos += len) out.push_back(decode_one(text, pos, len));
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string to_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

}  // namespace inflight
