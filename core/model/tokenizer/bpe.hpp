#pragma once
/// The BPE model of tokenizer.json: vocabulary, ranked merges, byte fallback.

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/base/error.hpp"
#include "core/base/types.hpp"

namespace inflight {

/// Splits pre-tokens into vocabulary ids by applying merges lowest rank first
/// (ties: leftmost), with a bounded cache of pre-token -> ids.
class bpe_model {
 public:
  /// Reads tokenizer.json's "model" object (type BPE; merges as "a b" strings or [a, b] pairs).
  /// Ids must be integers below `id_limit` (errc::corrupt_file otherwise): the tables are
  /// indexed by id, so a stray huge id would size them.
  static result<bpe_model> try_from_json(const nlohmann::json& model, std::int64_t id_limit);

  bpe_model() = default;
  bpe_model(bpe_model&& other) noexcept;
  bpe_model& operator=(bpe_model&& other) noexcept;

  /// Appends the ids of one pre-token (already in the vocabulary's alphabet) to `out`.
  void encode_word(std::string_view word, std::vector<token_id>& out) const;

  std::optional<token_id> find(std::string_view piece) const;
  /// Registers an added token's content (added tokens may be missing from "vocab").
  void add_piece(token_id id, const std::string& piece);
  /// The piece of `id`; empty when the id has no entry.
  const std::string& piece(token_id id) const;
  int num_pieces() const { return static_cast<int>(pieces_.size()); }
  bool has_byte_fallback() const { return byte_fallback_; }
  /// The byte a "<0xNN>" byte-fallback token stands for.
  std::optional<unsigned char> fallback_byte(token_id id) const;

  /// Most pre-tokens kept in the cache; the cache is emptied when it is full.
  static constexpr std::size_t max_cache_entries = 1 << 16;
  /// Longer pre-tokens are not cached (they rarely repeat).
  static constexpr std::size_t max_cached_word_bytes = 256;

 private:
  struct merge {
    std::int32_t rank;
    token_id merged;
  };
  static std::uint64_t pair_key(token_id a, token_id b) {
    return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
  }
  void merge_symbols(std::string_view word, std::vector<token_id>& out) const;
  void append_unknown(std::string_view chars, std::vector<token_id>& out) const;
  result<void> try_read_merges(const nlohmann::json& merges);

  /// Lets lookups take a string_view without building a std::string.
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, token_id, string_hash, std::equal_to<>> vocab_;
  std::vector<std::string> pieces_;
  std::unordered_map<std::uint64_t, merge> merges_;
  std::optional<token_id> unk_id_;
  std::int32_t byte_ids_[256];  ///< id of "<0xNN>", -1 when absent
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<token_id>> cache_;
};

}  // namespace inflight
