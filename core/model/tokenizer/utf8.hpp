#pragma once
/// UTF-8 helpers for detokenization. complete_utf8_prefix and is_valid_utf8 are declared
/// in core/model/tokenizer/tokenizer.hpp; this header adds the pieces they are built from.

#include <cstddef>
#include <string>
#include <string_view>

namespace inflight {

/// What starts at the front of a byte string: one character, a maximal invalid subpart
/// (Unicode 15, 3.9 "U+FFFD substitution of maximal subparts"), or the start of a
/// character cut off by the end of the input.
struct utf8_unit {
  std::size_t num_bytes = 0;  ///< bytes this unit covers (at least 1 on non-empty input)
  bool is_valid = false;      ///< a complete, well-formed character
  bool is_incomplete = false; ///< a well-formed start that the input ends before completing
};

/// Classifies the unit at the front of `bytes` (which must not be empty).
utf8_unit next_utf8_unit(std::string_view bytes);

/// `bytes` with every invalid or incomplete unit replaced by U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

/// The UTF-8 encoding of U+FFFD REPLACEMENT CHARACTER.
inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

}  // namespace inflight
