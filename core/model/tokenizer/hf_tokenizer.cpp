#include "core/model/tokenizer/hf_tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/json_depth.hpp"
#include "core/model/tokenizer/utf8.hpp"

namespace inflight {
namespace {

using json = nlohmann::json;

result<std::string> try_read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, "cannot open " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A token setting of tokenizer_config.json: a string or an AddedToken object.
std::string token_text(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return (*it)["content"].get<std::string>();
  return {};
}

/// The special token that TemplateProcessing puts first in a single sequence ("" when none).
result<std::string> template_first_token(const json& processor) {
  if (processor.is_null()) return std::string();
  const std::string type = processor.value("type", std::string("?"));
  if (type == "ByteLevel") return std::string();
  if (type == "Sequence") {
    std::string first;
    for (const auto& child : processor.at("processors")) {
      auto r = template_first_token(child);
      if (!r) return r;
      if (first.empty()) first = *r;
    }
    return first;
  }
  if (type != "TemplateProcessing") {
    return make_error(errc::unsupported, "tokenizer.json: post_processor '" + type +
                                             "' is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
  const json& single = processor.at("single");
  if (!single.empty() && single[0].contains("SpecialToken")) return single[0]["SpecialToken"].at("id").get<std::string>();
  return std::string();
}

}  // namespace

result<std::unique_ptr<hf_tokenizer>> hf_tokenizer::try_load(const std::filesystem::path& dir) {
  hf_tokenizer_sources sources;
  auto tokenizer_text = try_read_file(dir / "tokenizer.json");
  if (!tokenizer_text) return std::unexpected(tokenizer_text.error());
  sources.tokenizer_json = std::move(*tokenizer_text);
  if (auto config = try_read_file(dir / "tokenizer_config.json")) sources.tokenizer_config_json = std::move(*config);
  if (auto generation = try_read_file(dir / "generation_config.json")) sources.generation_config_json = std::move(*generation);
  return try_from_json(sources);
}

result<std::unique_ptr<hf_tokenizer>> hf_tokenizer::try_load_files(const std::filesystem::path& tokenizer_path,
                                                                   const std::filesystem::path& config_path) {
  hf_tokenizer_sources sources;
  auto tokenizer_text = try_read_file(tokenizer_path);
  if (!tokenizer_text) return std::unexpected(tokenizer_text.error());
  sources.tokenizer_json = std::move(*tokenizer_text);
  if (!config_path.empty()) {
    auto config = try_read_file(config_path);
    if (!config) return std::unexpected(config.error());
    sources.tokenizer_config_json = std::move(*config);
  }
  return try_from_json(sources);
}

result<std::unique_ptr<hf_tokenizer>> hf_tokenizer::try_from_json(const hf_tokenizer_sources& sources) {
  std::unique_ptr<hf_tokenizer> tok(new hf_tokenizer());
  try {
    if (auto r = tok->try_read_tokenizer(sources.tokenizer_json); !r) return std::unexpected(r.error());
    if (auto r = tok->try_read_config(sources.tokenizer_config_json); !r) return std::unexpected(r.error());
    tok->read_generation_config(sources.generation_config_json);
  } catch (const json::exception& e) {
    return make_error(errc::corrupt_file, std::string("tokenizer files: malformed JSON: ") + e.what());
  }
  return tok;
}

namespace {

/// Parses one of the tokenizer's JSON files, refusing nesting that nothing real has.
result<json> try_parse_json_file(const std::string& text, const char* file) {
  if (json_nests_deeper_than(text)) {
    return make_error(errc::corrupt_file, std::string(file) + " nests deeper than " + std::to_string(max_json_depth) +
                                              " levels");
  }
  return json::parse(text);
}

/// Unused ids a tokenizer.json may leave beyond its number of entries.
constexpr std::int64_t max_id_gap = 1 << 16;

/// The id of an added token: an integer below `limit`.
result<token_id> try_added_token_id(const json& entry, std::int64_t limit) {
  const json& id = entry.at("id");
  if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= limit) {
    return make_error(errc::corrupt_file, "tokenizer.json: added token '" + entry.value("content", std::string("?")) +
                                              "' has id " + id.dump() + ", not an integer in [0, " +
                                              std::to_string(limit) + ")");
  }
  return static_cast<token_id>(id.get<std::int64_t>());
}

}  // namespace

result<void> hf_tokenizer::try_read_tokenizer(const std::string& text) {
  const auto parsed = try_parse_json_file(text, "tokenizer.json");
  if (!parsed) return std::unexpected(parsed.error());
  const json& root = *parsed;
  const json added_tokens = root.value("added_tokens", json::array());
  // Tables are indexed by id. Ids may leave unused gaps, but an id far past the number
  // of entries is corruption that would size the tables (a 100-byte file asking for GBs).
  const json& model_json = root.at("model");
  const auto vocab = model_json.find("vocab");
  const std::size_t num_vocab = vocab != model_json.end() && vocab->is_object() ? vocab->size() : 0;
  const std::int64_t id_limit = 2 * std::int64_t(num_vocab + added_tokens.size()) + max_id_gap;
  auto model = bpe_model::try_from_json(model_json, id_limit);
  if (!model) return std::unexpected(model.error());
  model_ = std::move(*model);
  auto normalizer = text_normalizer::try_from_json(root.value("normalizer", json()));
  if (!normalizer) return std::unexpected(normalizer.error());
  normalizer_ = std::move(*normalizer);
  auto pre = pre_tokenizer::try_from_json(root.value("pre_tokenizer", json()));
  if (!pre) return std::unexpected(pre.error());
  pre_tokenizer_ = std::move(*pre);
  auto decoder = hf_decoder::try_from_json(root.value("decoder", json()));
  if (!decoder) return std::unexpected(decoder.error());
  decoder_ = std::move(*decoder);

  for (const auto& entry : added_tokens) {
    if (entry.value("single_word", false)) {
      return make_error(errc::unsupported, "tokenizer.json: single_word added tokens are not supported ('" +
                                               entry.at("content").get<std::string>() + "')");
    }
    const auto id = try_added_token_id(entry, id_limit);
    if (!id) return std::unexpected(id.error());
    added_token token{*id, entry.at("content").get<std::string>(), entry.value("special", false),
                      entry.value("lstrip", false), entry.value("rstrip", false)};
    model_.add_piece(token.id, token.content);
    added_.push_back(std::move(token));
  }
  added_kind_.assign(static_cast<std::size_t>(model_.num_pieces()), 0);
  for (const auto& token : added_) added_kind_[token.id] = token.is_special ? 2 : 1;
  matcher_ = added_token_matcher(added_);

  auto first = template_first_token(root.value("post_processor", json()));
  if (!first) return std::unexpected(first.error());
  bos_token_ = *first;
  adds_bos_ = !first->empty();
  return {};
}

result<void> hf_tokenizer::try_read_config(const std::string& text) {
  if (!text.empty()) {
    const auto parsed = try_parse_json_file(text, "tokenizer_config.json");
    if (!parsed) return std::unexpected(parsed.error());
    const json& config = *parsed;
    if (config.contains("bos_token")) bos_token_ = token_text(config, "bos_token");
    eos_token_ = token_text(config, "eos_token");
    if (auto it = config.find("add_bos_token"); it != config.end() && it->is_boolean()) adds_bos_ = it->get<bool>();
    if (auto it = config.find("chat_template"); it != config.end()) {
      if (it->is_string()) {
        chat_template_ = it->get<std::string>();
      } else if (it->is_array()) {
        for (const auto& named : *it) {
          if (chat_template_.empty() || named.value("name", std::string()) == "default") {
            chat_template_ = named.value("template", std::string());
          }
        }
      }
    }
  }
  if (!bos_token_.empty()) {
    bos_id_ = model_.find(bos_token_);
    if (!bos_id_) return make_error(errc::corrupt_file, "tokenizer: bos_token '" + bos_token_ + "' is not in the vocabulary");
  }
  if (!eos_token_.empty()) {
    auto eos = model_.find(eos_token_);
    if (!eos) return make_error(errc::corrupt_file, "tokenizer: eos_token '" + eos_token_ + "' is not in the vocabulary");
    eos_ids_.push_back(*eos);
  }
  return {};
}

void hf_tokenizer::read_generation_config(const std::string& text) {
  if (text.empty() || json_nests_deeper_than(text)) return;  // optional: only its EOS ids are read
  const json config = json::parse(text);
  auto add = [&](const json& id) {
    if (!id.is_number_integer()) return;
    const auto eos = id.get<token_id>();
    if (eos >= 0 && eos < vocab_size() && std::find(eos_ids_.begin(), eos_ids_.end(), eos) == eos_ids_.end()) {
      eos_ids_.push_back(eos);
    }
  };
  const json ids = config.value("eos_token_id", json());
  if (ids.is_array()) {
    for (const auto& id : ids) add(id);
  } else {
    add(ids);
  }
}

std::vector<token_id> hf_tokenizer::encode(std::string_view text, bool add_bos) const {
  return encode(text, encode_options{add_bos, true});
}

std::vector<token_id> hf_tokenizer::encode(std::string_view text, const encode_options& options) const {
  const std::string clean = to_valid_utf8(text);
  std::vector<token_id> ids;
  if (options.add_bos && bos_id_) ids.push_back(*bos_id_);
  if (!options.parse_special) {
    encode_section(clean, 0, ids);
    return ids;
  }
  const auto sections = matcher_.split(clean);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].is_added()) {
      ids.push_back(sections[i].added_id);
    } else {
      encode_section(sections[i].text, i, ids);
    }
  }
  return ids;
}

void hf_tokenizer::encode_section(std::string_view text, std::size_t section_index, std::vector<token_id>& out) const {
  std::string normalized = normalizer_.apply(std::string(text));
  if (normalized.empty()) return;
  for (const std::string& word : pre_tokenizer_.apply(std::move(normalized), section_index)) {
    model_.encode_word(word, out);
  }
}

bool hf_tokenizer::is_special(token_id token) const {
  return token >= 0 && static_cast<std::size_t>(token) < added_kind_.size() && added_kind_[token] == 2;
}

std::string hf_tokenizer::piece(token_id token) const { return model_.piece(token); }

std::string hf_tokenizer::token_bytes(token_id prev, token_id token) const {
  if (token < 0 || token >= vocab_size() || is_special(token)) return {};
  if (added_kind_[token] == 1) return model_.piece(token);
  // Sentencepiece-style decoders drop the space that encoding put before the first word.
  const bool is_text_start = prev < 0 || (bos_id_ && prev == *bos_id_);
  return decoder_.decode_piece(model_.piece(token), is_text_start);
}

std::string hf_tokenizer::decode(std::span<const token_id> ids, bool skip_special) const {
  std::string bytes;
  bool is_text_start = true;
  for (token_id id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (added_kind_[id] != 0) {
      if (added_kind_[id] == 2 && skip_special) continue;
      bytes += model_.piece(id);
    } else {
      bytes += decoder_.decode_piece(model_.piece(id), is_text_start);
    }
    is_text_start = false;
  }
  return to_valid_utf8(bytes);
}

}  // namespace inflight
