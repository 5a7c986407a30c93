#include "core/model/tokenizer/bpe.hpp"

#include <cstdio>
#include <queue>

#include <nlohmann/json.hpp>

#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

using json = nlohmann::json;

bool is_empty_or_null(const json& model, const char* key) {
  auto it = model.find(key);
  return it == model.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

}  // namespace

bpe_model::bpe_model(bpe_model&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      pieces_(std::move(other.pieces_)),
      merges_(std::move(other.merges_)),
      unk_id_(other.unk_id_),
      byte_fallback_(other.byte_fallback_),
      fuse_unk_(other.fuse_unk_),
      ignore_merges_(other.ignore_merges_) {
  std::copy(std::begin(other.byte_ids_), std::end(other.byte_ids_), byte_ids_);
}

bpe_model& bpe_model::operator=(bpe_model&& other) noexcept {
  if (this != &other) {
    vocab_ = std::move(other.vocab_);
    pieces_ = std::move(other.pieces_);
    merges_ = std::move(other.merges_);
    unk_id_ = other.unk_id_;
    byte_fallback_ = other.byte_fallback_;
    fuse_unk_ = other.fuse_unk_;
    ignore_merges_ = other.ignore_merges_;
    std::copy(std::begin(other.byte_ids_), std::end(other.byte_ids_), byte_ids_);
    cache_.clear();
  }
  return *this;
}

result<bpe_model> bpe_model::try_from_json(const json& model, std::int64_t id_limit) {
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return make_error(errc::unsupported, "tokenizer.json: model type '" + type + "' is not supported (only BPE)");
  }
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null() && it->get<double>() != 0.0) {
    return make_error(errc::unsupported, "tokenizer.json: BPE dropout is not supported");
  }
  if (!is_empty_or_null(model, "continuing_subword_prefix") || !is_empty_or_null(model, "end_of_word_suffix")) {
    return make_error(errc::unsupported,
                      "tokenizer.json: BPE continuing_subword_prefix / end_of_word_suffix are not supported");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object() || !model.contains("merges")) {
    return make_error(errc::corrupt_file, "tokenizer.json: BPE model without vocab or merges");
  }
  bpe_model bpe;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= id_limit) {
      return make_error(errc::corrupt_file, "tokenizer.json: vocab entry '" + piece + "' has id " + id.dump() +
                                                ", not an integer in [0, " + std::to_string(id_limit) + ")");
    }
    bpe.add_piece(static_cast<token_id>(id.get<std::int64_t>()), piece);
  }
  if (auto r = bpe.try_read_merges(model["merges"]); !r) return std::unexpected(r.error());
  if (model.contains("unk_token") && model["unk_token"].is_string()) bpe.unk_id_ = bpe.find(model["unk_token"].get<std::string>());
  bpe.byte_fallback_ = model.value("byte_fallback", false);
  bpe.fuse_unk_ = model.value("fuse_unk", false);
  bpe.ignore_merges_ = model.value("ignore_merges", false);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    bpe.byte_ids_[b] = bpe.find(name).value_or(-1);
  }
  return bpe;
}

result<void> bpe_model::try_read_merges(const json& merges) {
  merges_.reserve(merges.size());
  std::int32_t rank = 0;
  for (const auto& entry : merges) {
    std::string left, right;
    if (entry.is_string()) {
      const auto text = entry.get<std::string>();
      const auto space = text.find(' ');
      if (space == std::string::npos) return make_error(errc::corrupt_file, "tokenizer.json: bad merge '" + text + "'");
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2) {
      left = entry[0].get<std::string>();
      right = entry[1].get<std::string>();
    } else {
      return make_error(errc::corrupt_file, "tokenizer.json: bad merge entry " + entry.dump());
    }
    const auto a = find(left), b = find(right), merged = find(left + right);
    // A merge whose parts or result are outside the vocabulary can never apply.
    if (a && b && merged) merges_.try_emplace(pair_key(*a, *b), merge{rank, *merged});
    ++rank;
  }
  return {};
}

void bpe_model::add_piece(token_id id, const std::string& piece) {
  if (id < 0) return;
  if (static_cast<std::size_t>(id) >= pieces_.size()) pieces_.resize(static_cast<std::size_t>(id) + 1);
  pieces_[id] = piece;
  vocab_.try_emplace(piece, id);
}

std::optional<token_id> bpe_model::find(std::string_view piece) const {
  auto it = vocab_.find(piece);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string& bpe_model::piece(token_id id) const {
  static const std::string empty;
  if (id < 0 || static_cast<std::size_t>(id) >= pieces_.size()) return empty;
  return pieces_[id];
}

std::optional<unsigned char> bpe_model::fallback_byte(token_id id) const {
  if (!byte_fallback_) return std::nullopt;
  const std::string& p = piece(id);
  if (p.size() != 6 || p.compare(0, 3, "<0x") != 0 || p[5] != '>') return std::nullopt;
  for (int b = 0; b < 256; ++b) {
    if (byte_ids_[b] == id) return static_cast<unsigned char>(b);
  }
  return std::nullopt;
}

void bpe_model::encode_word(std::string_view word, std::vector<token_id>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto id = find(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool is_cacheable = word.size() <= max_cached_word_bytes;
  std::string key(word);
  if (is_cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<token_id> ids;
  merge_symbols(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (is_cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= max_cache_entries) cache_.clear();
    cache_.emplace(std::move(key), std::move(ids));
  }
}

void bpe_model::merge_symbols(std::string_view word, std::vector<token_id>& out) const {
  struct symbol {
    token_id id;
    std::int32_t prev, next;
    std::uint32_t begin, length;  ///< bytes of `word`; length 0 once merged into its left neighbour
  };
  std::vector<symbol> symbols;
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t len = std::min(utf8_char_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const auto n = static_cast<std::int32_t>(symbols.size());
    symbols.push_back({find(word.substr(pos, len)).value_or(-1), n - 1, n + 1, std::uint32_t(pos), std::uint32_t(len)});
    pos += len;
  }
  symbols.back().next = -1;

  struct candidate {
    std::int32_t rank, pos;
    token_id left, right;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<candidate, std::vector<candidate>, std::greater<>> queue;
  auto consider = [&](std::int32_t pos) {
    if (pos < 0 || symbols[pos].next < 0) return;
    const token_id a = symbols[pos].id, b = symbols[symbols[pos].next].id;
    if (a < 0 || b < 0) return;
    if (auto it = merges_.find(pair_key(a, b)); it != merges_.end()) queue.push({it->second.rank, pos, a, b});
  };
  for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    const candidate top = queue.top();
    queue.pop();
    symbol& left = symbols[top.pos];
    if (left.length == 0 || left.next < 0 || left.id != top.left) continue;
    symbol& right = symbols[left.next];
    if (right.id != top.right) continue;
    left.id = merges_.at(pair_key(top.left, top.right)).merged;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (std::int32_t i = 0; i >= 0; i = symbols[i].next) {
    if (symbols[i].id >= 0) {
      out.push_back(symbols[i].id);
    } else {
      append_unknown(word.substr(symbols[i].begin, symbols[i].length), out);
    }
  }
}

void bpe_model::append_unknown(std::string_view chars, std::vector<token_id>& out) const {
  if (byte_fallback_) {
    bool has_all = true;
    for (unsigned char c : chars) has_all = has_all && byte_ids_[c] >= 0;
    if (has_all) {
      for (unsigned char c : chars) out.push_back(byte_ids_[c]);
      return;
    }
  }
  if (!unk_id_) return;  // no unknown token: the character cannot be represented
  if (fuse_unk_ && !out.empty() && out.back() == *unk_id_) return;
  out.push_back(*unk_id_);
}

}  // namespace inflight
