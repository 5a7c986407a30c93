#include "core/model/tokenizer/gguf_vocab.hpp"

#include <algorithm>

#include "core/model/gguf/gguf.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"

namespace inflight {

namespace {

constexpr std::string_view space_marker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::unexpected<error> corrupt(const gguf_file& file, const std::string& what) {
  return make_error(errc::corrupt_file, "GGUF file '" + file.source() + "': " + what);
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0;;) {
    const auto hit = text.find(from, pos);
    out.append(text.substr(pos, hit == std::string_view::npos ? std::string_view::npos : hit - pos));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    pos = hit + from.size();
  }
}

/// A string key: absent gives "", another type is corrupt.
result<std::string> read_string(const gguf_file& file, std::string_view key) {
  const gguf_value* value = file.find(key);
  if (value == nullptr) return std::string();
  if (!value->as_string()) return corrupt(file, std::string(key) + " must be a string, found a " + to_string(value->type()));
  return std::string(*value->as_string());
}

/// An array key of `element` type with `expected` elements (0: any); absent gives nullptr.
result<const gguf_value*> read_array(const gguf_file& file, std::string_view key, gguf_type element,
                                     std::size_t expected) {
  const gguf_value* value = file.find(key);
  if (value == nullptr) return nullptr;
  if (!value->is_array() || value->element_type() != element) {
    return corrupt(file, std::string(key) + " must be an array of " + to_string(element));
  }
  if (expected > 0 && value->size() != expected) {
    return corrupt(file, std::string(key) + " has " + std::to_string(value->size()) + " entries for " +
                             std::to_string(expected) + " tokens");
  }
  return value;
}

/// A token id key: absent or outside the vocabulary (llama.cpp's -1 as u32) gives nullopt.
result<std::optional<token_id>> read_id(const gguf_file& file, std::string_view key, int num_tokens) {
  const gguf_value* value = file.find(key);
  if (value == nullptr) return std::optional<token_id>();
  const auto id = value->as_int();
  if (!id && value->type() != gguf_type::u64) return corrupt(file, std::string(key) + " must be an integer");
  if (!id || *id < 0 || *id >= num_tokens) return std::optional<token_id>();
  return std::optional<token_id>(token_id(*id));
}

result<std::optional<bool>> read_bool(const gguf_file& file, std::string_view key) {
  const gguf_value* value = file.find(key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->as_bool()) return corrupt(file, std::string(key) + " must be a bool, found a " + to_string(value->type()));
  return std::optional<bool>(*value->as_bool());
}

result<void> read_tables(const gguf_file& file, gguf_vocab& v) {
  auto tokens = read_array(file, "tokenizer.ggml.tokens", gguf_type::string, 0);
  if (!tokens) return std::unexpected(tokens.error());
  if (*tokens == nullptr || (*tokens)->size() == 0) return corrupt(file, "tokenizer.ggml.tokens is missing or empty");
  const std::size_t n = (*tokens)->size();
  v.tokens.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.tokens.emplace_back((*tokens)->string_at(i));
  auto scores = read_array(file, "tokenizer.ggml.scores", gguf_type::f32, n);
  if (!scores) return std::unexpected(scores.error());
  for (std::size_t i = 0; *scores != nullptr && i < n; ++i) v.scores.push_back(float(*(*scores)->float_at(i)));
  auto types = read_array(file, "tokenizer.ggml.token_type", gguf_type::i32, n);
  if (!types) return std::unexpected(types.error());
  for (std::size_t i = 0; *types != nullptr && i < n; ++i) v.token_types.push_back(std::int32_t(*(*types)->int_at(i)));
  auto merges = read_array(file, "tokenizer.ggml.merges", gguf_type::string, 0);
  if (!merges) return std::unexpected(merges.error());
  for (std::size_t i = 0; *merges != nullptr && i < (*merges)->size(); ++i) v.merges.emplace_back((*merges)->string_at(i));
  return {};
}

result<void> read_ids(const gguf_file& file, gguf_vocab& v) {
  const int n = v.num_tokens();
  const std::pair<const char*, std::optional<token_id>*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos_id},     {"tokenizer.ggml.eos_token_id", &v.eos_id},
      {"tokenizer.ggml.unknown_token_id", &v.unk_id}, {"tokenizer.ggml.padding_token_id", &v.pad_id},
      {"tokenizer.ggml.eot_token_id", &v.eot_id},     {"tokenizer.ggml.eom_token_id", &v.eom_id}};
  for (const auto& [key, out] : ids) {
    auto id = read_id(file, key, n);
    if (!id) return std::unexpected(id.error());
    *out = *id;
  }
  auto add_bos = read_bool(file, "tokenizer.ggml.add_bos_token");
  if (!add_bos) return std::unexpected(add_bos.error());
  v.add_bos = *add_bos;
  auto prefix = read_bool(file, "tokenizer.ggml.add_space_prefix");
  if (!prefix) return std::unexpected(prefix.error());
  v.add_space_prefix = prefix->value_or(true);
  auto extra_spaces = read_bool(file, "tokenizer.ggml.remove_extra_whitespaces");
  if (!extra_spaces) return std::unexpected(extra_spaces.error());
  if (extra_spaces->value_or(false)) {
    return make_error(errc::unsupported, "GGUF file '" + file.source() +
                                             "': tokenizer.ggml.remove_extra_whitespaces is not supported");
  }
  return {};
}

}  // namespace

std::string gguf_vocab::token_text(std::optional<token_id> id) const {
  if (!id || *id < 0 || *id >= num_tokens()) return {};
  return tokens[std::size_t(*id)];
}

bool gguf_vocab::adds_bos() const {
  if (add_bos) return *add_bos;
  return model == "llama" || pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
}

std::vector<token_id> gguf_vocab::end_ids() const {
  std::vector<token_id> ids;
  const auto add = [&](token_id id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (const auto& id : {eos_id, eot_id, eom_id}) {
    if (id) add(*id);
  }
  // As llama.cpp: control tokens that mark the end of a turn or text end a generation
  // too (a Llama-3 instruct file names <|eot_id|> as EOS, not <|eom_id|>).
  static constexpr std::string_view markers[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
                                                 "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>"};
  for (std::size_t i = 0; i < token_types.size() && i < tokens.size(); ++i) {
    if (token_types[i] != std::int32_t(gguf_token_type::control)) continue;
    if (std::find(std::begin(markers), std::end(markers), tokens[i]) != std::end(markers)) add(token_id(i));
  }
  return ids;
}

result<gguf_vocab> try_read_gguf_vocab(const gguf_file& file) {
  gguf_vocab v;
  auto model = read_string(file, "tokenizer.ggml.model");
  if (!model) return std::unexpected(model.error());
  if (model->empty()) return corrupt(file, "tokenizer.ggml.model is missing: the file has no tokenizer");
  v.model = std::move(*model);
  auto pre = read_string(file, "tokenizer.ggml.pre");
  if (!pre) return std::unexpected(pre.error());
  v.pre = std::move(*pre);
  if (auto ok = read_tables(file, v); !ok) return std::unexpected(ok.error());
  if (auto ok = read_ids(file, v); !ok) return std::unexpected(ok.error());
  auto chat = read_string(file, "tokenizer.chat_template");
  if (!chat) return std::unexpected(chat.error());
  v.chat_template = std::move(*chat);
  return v;
}

void write_gguf_vocab(gguf_writer& w, const gguf_vocab& v) {
  w.set_string("tokenizer.ggml.model", v.model);
  if (!v.pre.empty()) w.set_string("tokenizer.ggml.pre", v.pre);
  w.set_strings("tokenizer.ggml.tokens", v.tokens);
  if (!v.scores.empty()) w.set_f32s("tokenizer.ggml.scores", v.scores);
  if (!v.token_types.empty()) w.set_i32s("tokenizer.ggml.token_type", v.token_types);
  if (!v.merges.empty()) w.set_strings("tokenizer.ggml.merges", v.merges);
  const std::pair<const char*, std::optional<token_id>> ids[] = {
      {"tokenizer.ggml.bos_token_id", v.bos_id},     {"tokenizer.ggml.eos_token_id", v.eos_id},
      {"tokenizer.ggml.unknown_token_id", v.unk_id}, {"tokenizer.ggml.padding_token_id", v.pad_id},
      {"tokenizer.ggml.eot_token_id", v.eot_id},     {"tokenizer.ggml.eom_token_id", v.eom_id}};
  for (const auto& [key, id] : ids) {
    if (id) w.set_u32(key, std::uint32_t(*id));
  }
  if (v.add_bos) w.set_bool("tokenizer.ggml.add_bos_token", *v.add_bos);
  if (v.model == "llama") w.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (!v.chat_template.empty()) w.set_string("tokenizer.chat_template", v.chat_template);
}

gguf_vocab gguf_vocab_of(const llama2c_tokenizer& tok) {
  gguf_vocab v;
  v.model = "llama";
  for (token_id id = 0; id < tok.vocab_size(); ++id) {
    std::string piece = tok.piece(id);
    auto type = gguf_token_type::normal;
    if (id == llama2c_tokenizer::unk_token) {
      piece = "<unk>", type = gguf_token_type::unknown;
    } else if (id == llama2c_tokenizer::bos_token || id == llama2c_tokenizer::eos_token) {
      piece = id == llama2c_tokenizer::bos_token ? "<s>" : "</s>", type = gguf_token_type::control;
    } else if (piece.empty()) {
      type = gguf_token_type::control;
    } else if (piece.size() == 6 && piece.starts_with("<0x") && piece.ends_with('>')) {
      type = gguf_token_type::byte;
    }
    v.tokens.push_back(replace_all(piece, " ", space_marker));
    v.scores.push_back(tok.score(id));
    v.token_types.push_back(std::int32_t(type));
  }
  v.unk_id = llama2c_tokenizer::unk_token;
  v.bos_id = llama2c_tokenizer::bos_token;
  v.eos_id = llama2c_tokenizer::eos_token;
  v.add_bos = true;
  return v;
}

gguf_vocab byte_gguf_vocab(int vocab_size) {
  static constexpr char hex[] = "0123456789ABCDEF";
  gguf_vocab v;
  v.model = "llama";
  v.add_space_prefix = false;
  for (int id = 0; id < std::max(vocab_size, 259); ++id) {
    auto type = id < 3 ? (id == 0 ? gguf_token_type::unknown : gguf_token_type::control)
                       : id < 259 ? gguf_token_type::byte : gguf_token_type::unused;
    std::string piece = id == 0 ? "<unk>" : id == 1 ? "<s>" : id == 2 ? "</s>" : "";
    if (type == gguf_token_type::byte) piece = std::string("<0x") + hex[(id - 3) / 16] + hex[(id - 3) % 16] + ">";
    // llama.cpp turns every space into U+2581 before looking tokens up: the space's
    // token is that piece, or a space would become three byte tokens there.
    if (id == 3 + ' ') piece = std::string(space_marker), type = gguf_token_type::normal;
    if (type == gguf_token_type::unused) piece = "<unused" + std::to_string(id - 259) + ">";
    v.tokens.push_back(std::move(piece));
    v.scores.push_back(0.0f);
    v.token_types.push_back(std::int32_t(type));
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  return v;
}

}  // namespace inflight
