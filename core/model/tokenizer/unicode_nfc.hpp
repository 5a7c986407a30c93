#pragma once
/// Unicode Normalization Form C, for tokenizer.json files whose normalizer is "NFC".

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inflight {

/// NFC of `text` (canonical decomposition, canonical ordering, canonical composition).
/// Expects valid UTF-8 (invalid bytes become U+FFFD).
std::string nfc_normalize(std::string_view text);

namespace nfc_detail {

/// One canonical decomposition: `code_point` -> `first` `second` (second 0 for singletons).
struct decomposition_entry {
  std::uint32_t code_point;
  std::uint32_t first;
  std::uint32_t second;
  std::uint8_t is_primary_composite;  ///< recomposed by NFC (not excluded)
};

/// A run of code points sharing one non-zero canonical combining class.
struct combining_class_range {
  std::uint32_t first;
  std::uint32_t last;
  std::uint8_t combining_class;
};

extern const decomposition_entry decompositions[];
extern const std::size_t num_decompositions;
extern const combining_class_range combining_classes[];
extern const std::size_t num_combining_classes;

}  // namespace nfc_detail
}  // namespace inflight
