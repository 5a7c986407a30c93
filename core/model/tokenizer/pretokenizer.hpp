#pragma once
/// tokenizer.json normalizers and pre-tokenizers: the text transforms applied to each
/// plain section (between added tokens) before the BPE model sees it.
///
/// Supported normalizers: Sequence, Prepend, Replace (String or Regex), NFC, Strip.
/// Supported pre-tokenizers: Sequence, Split (String or Regex; behaviors Removed,
/// Isolated, MergedWithPrevious, MergedWithNext, Contiguous; invert), ByteLevel
/// (add_prefix_space, use_regex), Metaspace (replacement, prepend_scheme, split).
/// Anything else is an errc::unsupported error at load time.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/base/error.hpp"
#include "core/model/tokenizer/hf_regex.hpp"

namespace inflight {

/// A literal string or a regex (tokenizer.json's {"String": ...} / {"Regex": ...}).
struct text_pattern {
  std::string literal;
  std::optional<hf_regex> regex;
  static result<text_pattern> try_from_json(const nlohmann::json& pattern);
  /// Byte ranges of all matches in `text`.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;
};

/// The normalizer chain (empty when tokenizer.json has "normalizer": null).
class text_normalizer {
 public:
  static result<text_normalizer> try_from_json(const nlohmann::json& config);
  std::string apply(std::string text) const;

 private:
  enum class kind { prepend, replace, nfc, strip };
  struct step {
    kind type;
    std::string content;  ///< prepend / replacement text
    text_pattern pattern;
    bool left = false, right = false;
  };
  result<void> try_add(const nlohmann::json& config);
  std::vector<step> steps_;
};

/// The pre-tokenizer chain: one section of text -> the pre-tokens the model encodes.
class pre_tokenizer {
 public:
  static result<pre_tokenizer> try_from_json(const nlohmann::json& config);
  /// Pre-tokens of `text`; `section_index` is the section's position in the input
  /// (Metaspace's prepend_scheme "first" prepends only to section 0).
  std::vector<std::string> apply(std::string text, std::size_t section_index) const;
  bool is_byte_level() const { return is_byte_level_; }

 private:
  enum class kind { split, byte_level, metaspace };
  enum class behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
  struct step {
    kind type;
    text_pattern pattern;
    behavior split_behavior = behavior::isolated;
    bool invert = false;
    bool add_prefix_space = false;
    bool use_regex = false;
    std::string replacement;  ///< Metaspace
    std::string prepend_scheme = "always";
    bool split = true;
  };
  result<void> try_add(const nlohmann::json& config);
  static void split_piece(const step& s, std::string_view piece, std::vector<std::string>& out);
  std::vector<std::string> apply_step(const step& s, std::vector<std::string> pieces, std::size_t section_index) const;
  std::vector<step> steps_;
  bool is_byte_level_ = false;
};

}  // namespace inflight
