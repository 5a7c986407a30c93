#pragma once
/// tokenizer.json decoders, applied one token at a time (streaming needs per-token bytes).
///
/// Supported: Sequence, Replace, ByteFallback, Fuse, Strip (after Fuse only at the start
/// of the text), ByteLevel, Metaspace. Anything else is errc::unsupported at load time.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/base/error.hpp"
#include "core/model/tokenizer/pretokenizer.hpp"

namespace inflight {

class hf_decoder {
 public:
  static result<hf_decoder> try_from_json(const nlohmann::json& config);

  /// Raw bytes of a vocabulary piece; `is_text_start` when it is the first token of a
  /// text (where Strip / Metaspace drop the leading space).
  std::string decode_piece(const std::string& piece, bool is_text_start) const;

 private:
  enum class kind { replace, byte_fallback, fuse, strip, byte_level, metaspace };
  struct step {
    kind type;
    text_pattern pattern;
    std::string content;  ///< Replace: replacement; Strip: the stripped character; Metaspace: replacement
    int start = 0, stop = 0;
    bool can_strip_first = true;  ///< Metaspace: prepend_scheme is not "never"
  };
  result<void> try_add(const nlohmann::json& config);
  std::vector<step> steps_;
  bool has_fuse_ = false;
};

}  // namespace inflight
