#include "core/model/tokenizer/byte_level.hpp"

#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

bool is_printable_byte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

byte_level_alphabet::byte_level_alphabet() {
  byte_of_cp_.fill(-1);
  int next_extra = 0;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = is_printable_byte(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next_extra++);
    append_utf8(chars_[b], cp);
    byte_of_cp_[cp] = b;
  }
}

std::string byte_level_alphabet::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += chars_[b];
  return out;
}

std::optional<std::string> byte_level_alphabet::decode(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : to_codepoints(text)) {
    if (cp >= byte_of_cp_.size() || byte_of_cp_[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(byte_of_cp_[cp]));
  }
  return out;
}

const byte_level_alphabet& byte_level() {
  static const byte_level_alphabet instance;
  return instance;
}

}  // namespace inflight
