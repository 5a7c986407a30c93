#pragma once
/// The llama2.c tokenizer (tokenizer.bin), encoding and decoding exactly as llama2.c
/// run.c does.
///
/// File layout (little-endian):
///
///   int32 max_token_length
///   vocab_size times: float32 score | int32 length | length bytes (the piece)
///
/// The file does not store the vocabulary size; the model header does.
///
/// The same tokenizer serves SentencePiece-style vocabularies given in memory (GGUF's
/// "llama" tokenizer model, see spm_vocab): special ids from the vocabulary, byte
/// tokens found by their "<0xNN>" piece, control / user-defined / unknown tokens matched
/// in the text before merging and U+2581 read as a space, as llama.cpp does.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/model/tokenizer/added_tokens.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

/// What a token of a SentencePiece-style vocabulary is (GGUF's tokenizer.ggml.token_type).
enum class spm_token_kind : std::uint8_t {
  normal,
  unknown,       ///< matched in text
  control,       ///< matched in text; decodes to nothing
  user_defined,  ///< matched in text; decodes to its piece
  unused,        ///< decodes to nothing
  byte,          ///< "<0xNN>": decodes to that byte
};

/// A SentencePiece-style vocabulary in memory: pieces with spaces as ' ' (not U+2581),
/// their merge scores and kinds, and the special ids.
struct spm_vocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;          ///< one per piece
  std::vector<spm_token_kind> kinds;  ///< one per piece
  token_id bos_id = 1;
  token_id eos_id = 2;
  token_id unk_id = 0;
  bool adds_bos = true;
  bool add_space_prefix = true;       ///< " " before the text and after each control token
};

class llama2c_tokenizer final : public tokenizer {
 public:
  static constexpr token_id unk_token = 0;
  static constexpr token_id bos_token = 1;
  static constexpr token_id eos_token = 2;
  /// Byte fallback: byte b is token b + byte_token_offset (pieces "<0x00>".."<0xFF>").
  static constexpr token_id byte_token_offset = 3;
  /// Files larger than this are refused before being read.
  static constexpr std::uintmax_t max_file_bytes = std::uintmax_t{1} << 30;

  /// Reads the first `vocab_size` tokens of a tokenizer.bin (the model header's
  /// vocab_size); bytes after them are ignored, as llama2.c does.
  static result<std::unique_ptr<llama2c_tokenizer>> load(const std::filesystem::path& path,
                                                          int vocab_size);
  /// Reads every token up to the end of the file (for use without a model).
  static result<std::unique_ptr<llama2c_tokenizer>> load(const std::filesystem::path& path);
  /// Parses the file contents; `vocab_size` empty means "until the end of `bytes`".
  static result<std::unique_ptr<llama2c_tokenizer>> parse(std::string_view bytes,
                                                           std::optional<int> vocab_size);
  /// A vocabulary given in memory; errc::corrupt_file when its tables disagree in
  /// length or a special id lies outside it.
  static result<std::unique_ptr<llama2c_tokenizer>> try_from_vocab(spm_vocab vocab);

  llama2c_tokenizer(const llama2c_tokenizer&) = delete;
  llama2c_tokenizer& operator=(const llama2c_tokenizer&) = delete;

  /// BOS (when `add_bos`), the dummy-prefix " " (when `text` is not empty), one token
  /// per UTF-8 character (bytes as fallback), then highest-score pair merges. With a
  /// vocabulary that has control / user-defined tokens, each plain section between them
  /// is encoded so, the prefix " " after BOS-like control tokens and at the start.
  std::vector<token_id> encode(std::string_view text, bool add_bos) const override;
  /// The piece; after BOS without its leading space; "<0xNN>" as that byte; BOS, EOS,
  /// control and unused tokens (and ids outside the vocabulary) as "".
  std::string token_bytes(token_id prev, token_id token) const override;
  std::string piece(token_id token) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  std::optional<token_id> bos_id() const override { return bos_id_; }
  std::vector<token_id> eos_ids() const override { return {eos_id_}; }
  bool adds_bos() const override { return adds_bos_; }

  /// Merge score of a token (0 for ids outside the vocabulary).
  float score(token_id token) const;
  /// The token whose piece is exactly `piece` (the lowest id if the file repeats one).
  std::optional<token_id> find(std::string_view piece) const;
  /// max_token_length from the file header.
  int max_token_length() const { return max_token_length_; }

 private:
  llama2c_tokenizer() = default;

  /// Lets the piece map be queried with a string_view without building a string.
  struct piece_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void index_pieces();
  /// The dummy-prefix " " token when the text is not empty and a prefix is due.
  void append_prefix(std::string_view text, bool is_prefixed, std::vector<token_id>& out) const;
  /// One plain section: the prefix " " (when `is_prefixed`), characters, merges.
  void encode_plain(std::string_view text, bool is_prefixed, std::vector<token_id>& out) const;
  /// The run.c pre-merge tokens: one per character, or one per byte of it.
  void append_characters(std::string_view text, std::vector<token_id>& tokens) const;
  /// Merges adjacent pairs, best score first (leftmost on ties), until none merges.
  void merge_pairs(std::vector<token_id>& tokens) const;
  token_id byte_token(unsigned char byte) const;

  token_id bos_id_ = bos_token;
  token_id eos_id_ = eos_token;
  token_id unk_id_ = unk_token;
  bool adds_bos_ = true;
  bool add_space_prefix_ = true;
  std::vector<spm_token_kind> kinds_;  ///< empty for a tokenizer.bin
  token_id byte_ids_[256] = {};       ///< the token of each byte (unk when absent)
  added_token_matcher specials_;      ///< control, user-defined and unknown tokens (vocabularies)
  int max_token_length_ = 0;
  std::size_t longest_piece_ = 0;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  /// Decoded text of each token: byte tokens as their byte; BOS, EOS, control, unused empty.
  std::vector<std::string> texts_;
  std::unordered_map<std::string, token_id, piece_hash, std::equal_to<>> ids_;
};

}  // namespace inflight
