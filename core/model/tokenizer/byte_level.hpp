#pragma once
/// The GPT-2 byte <-> printable character mapping of byte-level BPE vocabularies.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace inflight {

/// Maps every byte to a printable character (bytes that are printable map to themselves,
/// the others to U+0100 and up) so a vocabulary can hold arbitrary bytes as text.
class byte_level_alphabet {
 public:
  byte_level_alphabet();
  /// The UTF-8 of the character standing for each byte of `bytes`.
  std::string encode(std::string_view bytes) const;
  /// The bytes a byte-level string stands for; nullopt when a character is outside the alphabet.
  std::optional<std::string> decode(std::string_view text) const;
  /// UTF-8 of the character standing for `byte`.
  const std::string& char_of(unsigned char byte) const { return chars_[byte]; }

 private:
  std::array<std::string, 256> chars_;
  std::array<int, 512> byte_of_cp_{};  ///< code point (< 512) -> byte, -1 when none
};

/// The process-wide alphabet (immutable).
const byte_level_alphabet& byte_level();

}  // namespace inflight
