#pragma once
/// Hugging Face tokenizer.json (+ tokenizer_config.json) tokenizers: byte-level BPE
/// (GPT-2, Llama-3, Qwen) and sentencepiece-style BPE with byte fallback (Llama-2).
///
/// Pipeline per input: added tokens are matched first in the raw text (leftmost-longest,
/// never split); each plain section between them is normalized, pre-tokenized and
/// encoded by the BPE model. Supported parts are listed in pretokenizer.hpp and
/// hf_decoder.hpp; anything else fails at load time with errc::unsupported.
/// Not supported: WordPiece / Unigram models, BPE dropout, subword prefixes/suffixes,
/// single_word added tokens, NFD / NFKC / NFKD / Lowercase normalizers, post-processors
/// other than TemplateProcessing / ByteLevel (BOS comes from tokenizer_config.json).

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model/tokenizer/added_tokens.hpp"
#include "core/model/tokenizer/bpe.hpp"
#include "core/model/tokenizer/hf_decoder.hpp"
#include "core/model/tokenizer/pretokenizer.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

/// The JSON texts a tokenizer is built from (empty strings for absent files).
struct hf_tokenizer_sources {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
  std::string generation_config_json;  ///< only its eos_token_id (int or list) is read
};

/// How a text is encoded.
struct encode_options {
  bool add_bos = false;
  /// Match added / special tokens written in the text; false encodes them as plain text.
  bool parse_special = true;
};

class hf_tokenizer final : public tokenizer {
 public:
  /// Loads tokenizer.json, and tokenizer_config.json / generation_config.json when present, from `dir`.
  static result<std::unique_ptr<hf_tokenizer>> try_load(const std::filesystem::path& dir);
  /// Loads explicit files; `config_path` may be empty.
  static result<std::unique_ptr<hf_tokenizer>> try_load_files(const std::filesystem::path& tokenizer_path,
                                                              const std::filesystem::path& config_path = {});
  static result<std::unique_ptr<hf_tokenizer>> try_from_json(const hf_tokenizer_sources& sources);

  std::vector<token_id> encode(std::string_view text, bool add_bos) const override;
  std::vector<token_id> encode(std::string_view text, const encode_options& options) const;
  /// Text of `ids` (invalid UTF-8 becomes U+FFFD); special tokens are dropped when `skip_special`.
  std::string decode(std::span<const token_id> ids, bool skip_special = true) const;

  std::string token_bytes(token_id prev, token_id token) const override;
  std::string piece(token_id token) const override;
  int vocab_size() const override { return model_.num_pieces(); }
  std::optional<token_id> bos_id() const override { return bos_id_; }
  std::vector<token_id> eos_ids() const override { return eos_ids_; }
  bool adds_bos() const override { return adds_bos_ && bos_id_.has_value(); }

  std::optional<token_id> token_to_id(std::string_view piece) const { return model_.find(piece); }
  /// True for added tokens marked "special" (they decode to nothing in generated text).
  bool is_special(token_id token) const;
  /// BOS / EOS token text from tokenizer_config.json ("" when unset); chat templates use them.
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  /// tokenizer_config.json's chat_template ("" when absent; the "default" one of a list).
  const std::string& chat_template() const { return chat_template_; }

 private:
  hf_tokenizer() = default;
  result<void> try_read_tokenizer(const std::string& text);
  result<void> try_read_config(const std::string& text);
  void read_generation_config(const std::string& text);
  void encode_section(std::string_view text, std::size_t section_index, std::vector<token_id>& out) const;

  bpe_model model_;
  text_normalizer normalizer_;
  pre_tokenizer pre_tokenizer_;
  hf_decoder decoder_;
  std::vector<added_token> added_;
  std::vector<std::int8_t> added_kind_;  ///< per id: 0 plain, 1 added, 2 special
  added_token_matcher matcher_;
  std::optional<token_id> bos_id_;
  std::vector<token_id> eos_ids_;
  bool adds_bos_ = false;
  std::string bos_token_, eos_token_, chat_template_;
};

}  // namespace inflight
