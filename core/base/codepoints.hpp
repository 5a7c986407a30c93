#pragma once
/// UTF-8 <-> code point conversion used by the tokenizer.json pipeline.

#include <string>
#include <string_view>

namespace inflight {

/// Code points of `text`; each byte of an invalid sequence becomes U+FFFD.
std::u32string to_codepoints(std::string_view text);

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

/// UTF-8 of a code point sequence.
std::string to_utf8(std::u32string_view cps);

/// Byte length of the UTF-8 character starting with `lead` (1 for invalid lead bytes).
inline std::size_t utf8_char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

}  // namespace inflight
