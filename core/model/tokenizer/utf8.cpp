#include "core/model/tokenizer/utf8.hpp"

#include <cstdint>

#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

namespace {

/// Length of the character a lead byte starts and the allowed range of its second
/// byte; the narrowed ranges exclude overlongs (E0, F0), surrogates (ED) and code
/// points above U+10FFFF (F4). Zero length: the byte cannot start a character.
struct lead_byte_rule {
  std::size_t length = 0;
  std::uint8_t second_lo = 0x80;
  std::uint8_t second_hi = 0xBF;
};

lead_byte_rule rule_for(std::uint8_t lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xE1 && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {};
}

}  // namespace

utf8_unit next_utf8_unit(std::string_view bytes) {
  const auto lead = static_cast<std::uint8_t>(bytes[0]);
  if (lead < 0x80) return {1, true, false};
  const lead_byte_rule rule = rule_for(lead);
  if (rule.length == 0) return {1, false, false};
  for (std::size_t i = 1; i < rule.length; ++i) {
    if (i >= bytes.size()) return {i, false, true};
    const auto byte = static_cast<std::uint8_t>(bytes[i]);
    const std::uint8_t lo = i == 1 ? rule.second_lo : 0x80;
    const std::uint8_t hi = i == 1 ? rule.second_hi : 0xBF;
    if (byte < lo || byte > hi) return {i, false, false};
  }
  return {rule.length, true, false};
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const utf8_unit unit = next_utf8_unit(bytes.substr(pos));
    if (unit.is_valid) {
      out.append(bytes.substr(pos, unit.num_bytes));
    } else {
      out.append(replacement_character);
    }
    pos += unit.num_bytes;
  }
  return out;
}

std::size_t complete_utf8_prefix(std::string_view bytes) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const utf8_unit unit = next_utf8_unit(bytes.substr(pos));
    if (unit.is_incomplete) break;
    pos += unit.num_bytes;
  }
  return pos;
}

bool is_valid_utf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const utf8_unit unit = next_utf8_unit(text.substr(pos));
    if (!unit.is_valid) return false;
    pos += unit.num_bytes;
  }
  return true;
}

}  // namespace inflight
