#include "core/model/tokenizer/llama2c_tokenizer.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <queue>
#include <system_error>

namespace inflight {

namespace {

static_assert(std::endian::native == std::endian::little,
              "tokenizer.bin is little-endian; a big-endian host would need byte swaps");

/// A piece longer than this means the header is garbage, not a tokenizer.
constexpr std::int32_t max_plausible_token_length = 1 << 16;
/// run.c keeps a merge only when its score beats this starting value.
constexpr float min_merge_score = -1e10f;

/// Bounds-checked little-endian reads over the file contents.
class byte_reader {
 public:
  explicit byte_reader(std::string_view data) : data_(data) {}
  std::size_t num_left() const { return data_.size() - pos_; }
  std::size_t position() const { return pos_; }
  bool can_read(std::size_t num_bytes) const { return num_left() >= num_bytes; }

  template <class T>
  T read() {
    T value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string_view read_bytes(std::size_t num_bytes) {
    auto bytes = data_.substr(pos_, num_bytes);
    pos_ += num_bytes;
    return bytes;
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// The byte a "<0xNN>" piece stands for, if it is one.
std::optional<char> byte_piece_value(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return std::nullopt;
  const int hi = hex_digit(piece[3]);
  const int lo = hex_digit(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<char>(hi * 16 + lo);
}

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

result<std::string> read_whole_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return make_error(errc::not_found, "tokenizer file not found: " + path.string());
  }
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return make_error(errc::io_error, path.string() + ": cannot read size: " + ec.message());
  if (size > llama2c_tokenizer::max_file_bytes) {
    return make_error(errc::corrupt_file, path.string() + ": " + std::to_string(size) +
                                              " bytes is too large for a tokenizer.bin");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error(errc::io_error, path.string() + ": cannot open for reading");
  std::string data(static_cast<std::size_t>(size), '\0');
  file.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(file.gcount()) != size) {
    return make_error(errc::io_error, path.string() + ": short read");
  }
  return data;
}

result<std::unique_ptr<llama2c_tokenizer>> load_file(const std::filesystem::path& path,
                                                     std::optional<int> vocab_size) {
  auto data = read_whole_file(path);
  if (!data) return std::unexpected(data.error());
  auto tok = llama2c_tokenizer::parse(*data, vocab_size);
  if (!tok) return make_error(tok.error().code, path.string() + ": " + tok.error().message);
  return tok;
}

std::unexpected<error> corrupt(std::string message) {
  return make_error(errc::corrupt_file, "llama2.c tokenizer: " + std::move(message));
}

struct token_record {
  float score;
  std::string_view piece;
};

/// Reads token `index`'s score, length and piece, refusing what cannot be a token.
result<token_record> read_token_record(byte_reader& in, std::size_t index, std::int32_t max_len) {
  const std::string where =
      "token " + std::to_string(index) + " (offset " + std::to_string(in.position()) + ")";
  if (!in.can_read(8)) return corrupt("file ends inside the header of " + where);
  const auto score = in.read<float>();
  const auto len = in.read<std::int32_t>();
  if (std::isnan(score)) return corrupt(where + " has a NaN score");
  if (len < 0 || len > max_len) {
    return corrupt(where + " has length " + std::to_string(len) + ", outside [0, " +
                   std::to_string(max_len) + "]");
  }
  if (!in.can_read(static_cast<std::size_t>(len))) {
    return corrupt("file ends inside the piece of " + where);
  }
  return token_record{score, in.read_bytes(static_cast<std::size_t>(len))};
}

}  // namespace

result<std::unique_ptr<llama2c_tokenizer>> llama2c_tokenizer::load(
    const std::filesystem::path& path, int vocab_size) {
  return load_file(path, vocab_size);
}

result<std::unique_ptr<llama2c_tokenizer>> llama2c_tokenizer::load(
    const std::filesystem::path& path) {
  return load_file(path, std::nullopt);
}

result<std::unique_ptr<llama2c_tokenizer>> llama2c_tokenizer::parse(
    std::string_view bytes, std::optional<int> vocab_size) {
  if (vocab_size && *vocab_size <= eos_token) {
    return make_error(errc::invalid_argument,
                      "llama2.c tokenizer: vocab_size " + std::to_string(*vocab_size) +
                          " is too small (ids 0, 1, 2 are <unk>, BOS, EOS)");
  }
  byte_reader in(bytes);
  if (!in.can_read(sizeof(std::int32_t))) {
    return corrupt("file of " + std::to_string(bytes.size()) + " bytes has no header");
  }
  const auto max_len = in.read<std::int32_t>();
  if (max_len <= 0 || max_len > max_plausible_token_length) {
    return corrupt("max_token_length " + std::to_string(max_len) + " is not in [1, " +
                   std::to_string(max_plausible_token_length) + "]");
  }
  // Each token takes at least 8 bytes: refuse an impossible count before reserving.
  const std::size_t max_tokens = in.num_left() / 8;
  if (vocab_size && static_cast<std::size_t>(*vocab_size) > max_tokens) {
    return corrupt("file holds at most " + std::to_string(max_tokens) +
                   " tokens but the vocabulary has " + std::to_string(*vocab_size));
  }
  std::unique_ptr<llama2c_tokenizer> tok(new llama2c_tokenizer());
  tok->max_token_length_ = max_len;
  const std::size_t num_expected = vocab_size ? static_cast<std::size_t>(*vocab_size) : 0;
  tok->pieces_.reserve(num_expected);
  tok->scores_.reserve(num_expected);
  for (std::size_t i = 0; vocab_size ? i < num_expected : in.num_left() > 0; ++i) {
    auto record = read_token_record(in, i, max_len);
    if (!record) return std::unexpected(record.error());
    tok->scores_.push_back(record->score);
    tok->pieces_.emplace_back(record->piece);
  }
  if (tok->pieces_.size() <= static_cast<std::size_t>(eos_token)) {
    return corrupt("only " + std::to_string(tok->pieces_.size()) +
                   " tokens; ids 0, 1, 2 must be <unk>, BOS, EOS");
  }
  tok->index_pieces();
  return tok;
}

void llama2c_tokenizer::index_pieces() {
  ids_.reserve(pieces_.size());
  texts_.reserve(pieces_.size());
  const auto kind_of = [&](std::size_t i) { return kinds_.empty() ? spm_token_kind::normal : kinds_[i]; };
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const std::string& p = pieces_[i];
    ids_.try_emplace(p, static_cast<token_id>(i));  // the first of equal pieces wins
    longest_piece_ = std::max(longest_piece_, p.size());
    const auto id = static_cast<token_id>(i);
    const auto kind = kind_of(i);
    if (id == bos_id_ || id == eos_id_ || kind == spm_token_kind::control || kind == spm_token_kind::unused) {
      texts_.emplace_back();
    } else if (auto byte = byte_piece_value(p)) {
      texts_.emplace_back(1, *byte);
    } else {
      texts_.push_back(p);
    }
  }
  for (int b = 0; b < 256; ++b) {
    // tokenizer.bin: run.c's fixed offset; a vocabulary: the token whose piece is "<0xNN>".
    const token_id offset_id = static_cast<token_id>(b) + byte_token_offset;
    byte_ids_[b] = offset_id < vocab_size() ? offset_id : unk_id_;
  }
  if (kinds_.empty()) return;
  for (int b = 0; b < 256; ++b) {
    static constexpr char hex[] = "0123456789ABCDEF";
    const std::string piece = std::string("<0x") + hex[b / 16] + hex[b % 16] + ">";
    byte_ids_[b] = find(piece).value_or(unk_id_);
  }
}

std::optional<token_id> llama2c_tokenizer::find(std::string_view piece) const {
  auto it = ids_.find(piece);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

float llama2c_tokenizer::score(token_id token) const {
  if (token < 0 || token >= vocab_size()) return 0.0f;
  return scores_[static_cast<std::size_t>(token)];
}

std::string llama2c_tokenizer::piece(token_id token) const {
  if (token < 0 || token >= vocab_size()) return {};
  return pieces_[static_cast<std::size_t>(token)];
}

std::string llama2c_tokenizer::token_bytes(token_id prev, token_id token) const {
  if (token < 0 || token >= vocab_size()) return {};
  const auto index = static_cast<std::size_t>(token);
  const std::string& text = texts_[index];
  // run.c tests the raw piece, so "<0x20>" after BOS keeps its space. BOS and EOS have no
  // text whatever their piece is.
  if (prev == bos_id_ && add_space_prefix_ && pieces_[index].starts_with(' ') && !text.empty()) return text.substr(1);
  return text;
}

token_id llama2c_tokenizer::byte_token(unsigned char byte) const { return byte_ids_[byte]; }

std::vector<token_id> llama2c_tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<token_id> tokens;
  tokens.reserve(text.size() + 2);
  if (add_bos) tokens.push_back(bos_id_);
  if (kinds_.empty()) {
    // A tokenizer.bin, as run.c: the merges run over BOS too (a vocabulary could merge it with what follows).
    append_prefix(text, true, tokens);
    append_characters(text, tokens);
    merge_pairs(tokens);
    return tokens;
  }
  // As llama.cpp: special tokens first; the prefix space starts the text and follows each.
  bool is_prev_special = true;
  for (const auto& section : specials_.split(text)) {
    if (section.is_added()) {
      tokens.push_back(section.added_id);
      is_prev_special = true;
    } else {
      encode_plain(section.text, is_prev_special, tokens);
      is_prev_special = false;
    }
  }
  return tokens;
}

void llama2c_tokenizer::append_prefix(std::string_view text, bool is_prefixed, std::vector<token_id>& out) const {
  if (text.empty() || !is_prefixed || !add_space_prefix_) return;
  // run.c would emit -1 for a vocabulary without " "; leaving the prefix out is safer.
  if (auto space = find(" ")) out.push_back(*space);
}

void llama2c_tokenizer::encode_plain(std::string_view text, bool is_prefixed, std::vector<token_id>& out) const {
  // llama.cpp writes spaces as U+2581 before looking pieces up, so a U+2581 in the text
  // is a space too.
  static constexpr std::string_view space_marker = "\xE2\x96\x81";
  std::string spaced;
  if (text.find(space_marker) != std::string_view::npos) {
    for (std::size_t pos = 0; pos < text.size();) {
      const bool is_marker = text.substr(pos, space_marker.size()) == space_marker;
      spaced.push_back(is_marker ? ' ' : text[pos]);
      pos += is_marker ? space_marker.size() : 1;
    }
    text = spaced;
  }
  std::vector<token_id> tokens;
  tokens.reserve(text.size() + 1);
  append_prefix(text, is_prefixed, tokens);
  append_characters(text, tokens);
  merge_pairs(tokens);
  out.insert(out.end(), tokens.begin(), tokens.end());
}

void llama2c_tokenizer::append_characters(std::string_view text,
                                          std::vector<token_id>& tokens) const {
  // Mirrors run.c byte for byte, including how it cuts invalid UTF-8: a character is a
  // non-continuation byte plus the continuation bytes after it, at most 4 bytes.
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!is_continuation_byte(text[i])) start = i;
    const std::size_t len = i + 1 - start;
    const bool is_continued = i + 1 < text.size() && is_continuation_byte(text[i + 1]);
    if (is_continued && len < 4) continue;
    const std::string_view character = text.substr(start, len);
    if (auto id = find(character)) {
      tokens.push_back(*id);
    } else {
      for (char byte : character) tokens.push_back(byte_token(static_cast<unsigned char>(byte)));
    }
    start = i + 1;
  }
}

namespace {

/// A pair of adjacent tokens that would merge; stale once either side has changed.
struct merge_candidate {
  float score;
  std::size_t left;
  std::size_t right;
  token_id left_id;
  token_id right_id;
  token_id merged_id;
};

/// Best score first; on equal scores the leftmost pair, as run.c's strict `>` scan picks.
struct lower_priority {
  bool operator()(const merge_candidate& a, const merge_candidate& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

constexpr std::size_t no_node = static_cast<std::size_t>(-1);

}  // namespace

void llama2c_tokenizer::merge_pairs(std::vector<token_id>& tokens) const {
  // Doubly linked list over the token positions plus a queue of candidate merges. A
  // node keeps its original position when it absorbs its right neighbour, so position
  // order is list order and the queue's tie-break matches the left-to-right scan.
  const std::size_t n = tokens.size();
  if (n < 2) return;
  std::vector<std::size_t> prev(n), next(n);
  std::vector<bool> is_alive(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? no_node : i - 1;
    next[i] = i + 1 == n ? no_node : i + 1;
  }
  std::priority_queue<merge_candidate, std::vector<merge_candidate>, lower_priority> queue;
  std::string joined;
  auto try_queue = [&](std::size_t left, std::size_t right) {
    if (left == no_node || right == no_node) return;
    const std::string& a = pieces_[static_cast<std::size_t>(tokens[left])];
    const std::string& b = pieces_[static_cast<std::size_t>(tokens[right])];
    if (a.size() + b.size() > longest_piece_) return;
    joined.assign(a).append(b);
    auto merged = find(joined);
    if (!merged) return;
    const float s = scores_[static_cast<std::size_t>(*merged)];
    if (!(s > min_merge_score)) return;  // also drops -inf, which run.c never picks
    queue.push({s, left, right, tokens[left], tokens[right], *merged});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) try_queue(i, i + 1);
  while (!queue.empty()) {
    const merge_candidate c = queue.top();
    queue.pop();
    const bool is_current = is_alive[c.left] && is_alive[c.right] && next[c.left] == c.right &&
                            tokens[c.left] == c.left_id && tokens[c.right] == c.right_id;
    if (!is_current) continue;
    tokens[c.left] = c.merged_id;
    is_alive[c.right] = false;
    next[c.left] = next[c.right];
    if (next[c.right] != no_node) prev[next[c.right]] = c.left;
    try_queue(prev[c.left], c.left);
    try_queue(c.left, next[c.left]);
  }
  std::size_t num_kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (is_alive[i]) tokens[num_kept++] = tokens[i];
  }
  tokens.resize(num_kept);
}

}  // namespace inflight
