#pragma once
/// Tokenizers stored in GGUF files (the tokenizer.ggml.* keys):
///
///   model "llama"  SentencePiece-style: tokens (spaces as U+2581), scores, token types,
///                  "<0xNN>" byte-fallback tokens -> llama2c_tokenizer::try_from_vocab
///   model "gpt2"   byte-level BPE: tokens, merges ("left right", best first) and the
///                  pre-tokenizer named by tokenizer.ggml.pre -> hf_tokenizer, built from
///                  an equivalent tokenizer.json in memory
///
/// Pre-tokenizers: llama-bpe / llama3 / llama-v3 (Llama 3), qwen2 / deepseek-r1-qwen
/// (Qwen2, Qwen3; with the NFC normalizer their tokenizer.json has), smollm, gpt-2,
/// default (also an absent key). Any other model or pre-tokenizer is errc::unsupported,
/// named in the message.
/// Token types: 1 normal, 2 unknown, 3 control (matched in text, decodes to nothing),
/// 4 user-defined (matched in text, decodes to itself), 5 unused, 6 byte.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

class gguf_file;
class gguf_writer;
class llama2c_tokenizer;

/// tokenizer.ggml.token_type values.
enum class gguf_token_type : std::int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

/// A tokenizer as a GGUF file stores it.
struct gguf_vocab {
  std::string model = "llama";           ///< tokenizer.ggml.model
  std::string pre;                       ///< tokenizer.ggml.pre (gpt2); "" when absent
  std::vector<std::string> tokens;       ///< as in the file (SentencePiece spaces as U+2581)
  std::vector<float> scores;             ///< llama: one per token (empty: all 0)
  std::vector<std::int32_t> token_types; ///< one per token (empty: all normal)
  std::vector<std::string> merges;       ///< gpt2
  std::optional<token_id> bos_id, eos_id, unk_id, pad_id, eot_id, eom_id;
  std::optional<bool> add_bos;           ///< absent: the model's default
  bool add_space_prefix = true;          ///< llama: " " before the text
  std::string chat_template;             ///< tokenizer.chat_template

  int num_tokens() const { return int(tokens.size()); }
  /// The text of a token id ("" when absent or out of range).
  std::string token_text(std::optional<token_id> id) const;
  /// Whether BOS is prepended: add_bos, else the default of the model / pre-tokenizer.
  bool adds_bos() const;
  /// The ids that end a generation, each once: EOS, EOT, EOM, then the control tokens
  /// llama.cpp also stops at (<|eot_id|>, <|eom_id|>, <|im_end|>, <|end|>,
  /// <end_of_turn>, <|endoftext|>, <|end_of_text|>).
  std::vector<token_id> end_ids() const;
};

/// Reads the tokenizer.ggml.* keys (and tokenizer.chat_template). errc::corrupt_file for
/// keys of the wrong type or tables whose lengths disagree. Special ids outside the
/// vocabulary (llama.cpp writes -1 as u32 for "none") count as absent.
result<gguf_vocab> try_read_gguf_vocab(const gguf_file& file);

/// Sets the tokenizer.ggml.* keys (and tokenizer.chat_template when not empty).
void write_gguf_vocab(gguf_writer& writer, const gguf_vocab& vocab);

/// The tokenizer the vocabulary describes (see the top of this file).
result<std::shared_ptr<const tokenizer>> try_make_gguf_tokenizer(const gguf_vocab& vocab);

/// A llama2.c tokenizer as llama.cpp's converter writes it: <unk>, <s>, </s> at 0..2,
/// control for empty pieces, byte tokens typed, spaces as U+2581, scores kept.
gguf_vocab gguf_vocab_of(const llama2c_tokenizer& tok);

/// The byte-level vocabulary of dummy models (byte_tokenizer's ids): <unk>, <s>, </s>,
/// the 256 "<0xNN>" byte tokens (the space's is U+2581, as llama.cpp looks spaces up),
/// then unused tokens up to `vocab_size`; no space prefix.
gguf_vocab byte_gguf_vocab(int vocab_size);

}  // namespace inflight
