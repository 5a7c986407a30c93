// The tokenizer of a GGUF vocabulary: SentencePiece-style ("llama") on llama2c_tokenizer,
// byte-level BPE ("gpt2") on hf_tokenizer through an equivalent tokenizer.json.
#include <array>

#include <nlohmann/json.hpp>

#include "core/model/tokenizer/gguf_vocab.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "core/model/tokenizer/utf8.hpp"

namespace inflight {

namespace {

using json = nlohmann::json;

constexpr std::string_view space_marker = "\xE2\x96\x81";

// The split patterns of the pre-tokenizers, as the models' tokenizer.json files have them.
constexpr const char* llama3_pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* qwen2_pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// o200k (GPT-4o, gpt-oss): cased words split at their capitals, contractions attached.
constexpr const char* gpt4o_pattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* gpt2_pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/// A pre-tokenizer name: the regexes that split the text, one after the other.
struct pre_tokenizer_row {
  std::array<const char*, 4> names;
  std::array<const char*, 4> patterns;
  bool is_nfc = false;          ///< Qwen's tokenizer.json normalizes to NFC first
  bool ignores_merges = false;  ///< a whole pre-token found in the vocabulary is one token
};

constexpr std::array<pre_tokenizer_row, 6> pre_tokenizers{{
    {{"llama-bpe", "llama3", "llama-v3"}, {llama3_pattern}, false, true},
    {{"gpt-4o"}, {gpt4o_pattern}, false, false},
    {{"qwen2", "deepseek-r1-qwen"}, {qwen2_pattern}, true, false},
    {{"smollm"}, {"\\p{N}", gpt2_pattern}, false, false},
    {{"gpt-2", "gpt2"}, {gpt2_pattern}, false, false},
    {{"default", ""}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", gpt2_pattern, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
}};

const pre_tokenizer_row* find_pre_tokenizer(std::string_view name) {
  for (const auto& row : pre_tokenizers) {
    for (const char* n : row.names) {
      if (n != nullptr && name == n) return &row;
    }
  }
  return nullptr;
}

std::string pre_tokenizer_names() {
  std::string names;
  for (const auto& row : pre_tokenizers) {
    for (const char* n : row.names) {
      if (n != nullptr && *n != '\0') names += (names.empty() ? "" : ", ") + std::string(n);
    }
  }
  return names;
}

gguf_token_type type_of(const gguf_vocab& v, std::size_t i) {
  return v.token_types.empty() ? gguf_token_type::normal : gguf_token_type(v.token_types[i]);
}

spm_token_kind kind_of(gguf_token_type type) {
  switch (type) {
    case gguf_token_type::unknown: return spm_token_kind::unknown;
    case gguf_token_type::control: return spm_token_kind::control;
    case gguf_token_type::user_defined: return spm_token_kind::user_defined;
    case gguf_token_type::unused: return spm_token_kind::unused;
    case gguf_token_type::byte: return spm_token_kind::byte;
    default: return spm_token_kind::normal;
  }
}

result<std::shared_ptr<const tokenizer>> make_spm(const gguf_vocab& v) {
  spm_vocab s;
  s.pieces.reserve(v.tokens.size());
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    std::string piece;
    std::string_view rest = v.tokens[i];
    for (auto hit = rest.find(space_marker); hit != std::string_view::npos; hit = rest.find(space_marker)) {
      piece.append(rest.substr(0, hit)).push_back(' ');
      rest.remove_prefix(hit + space_marker.size());
    }
    s.pieces.push_back(piece.append(rest));
    s.kinds.push_back(kind_of(type_of(v, i)));
  }
  s.scores = v.scores.empty() ? std::vector<float>(v.tokens.size(), 0.0f) : v.scores;
  // llama.cpp's defaults for SentencePiece vocabularies.
  s.bos_id = v.bos_id.value_or(1);
  s.eos_id = v.eos_id.value_or(2);
  s.unk_id = v.unk_id.value_or(0);
  s.adds_bos = v.adds_bos();
  s.add_space_prefix = v.add_space_prefix;
  auto tok = llama2c_tokenizer::try_from_vocab(std::move(s));
  if (!tok) return std::unexpected(tok.error());
  return std::shared_ptr<const tokenizer>(std::move(*tok));
}

json pre_tokenizer_json(const pre_tokenizer_row& row) {
  json steps = json::array();
  for (const char* pattern : row.patterns) {
    if (pattern == nullptr) break;
    steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}});
  }
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
  return {{"type", "Sequence"}, {"pretokenizers", std::move(steps)}};
}

/// tokenizer.json and tokenizer_config.json texts equivalent to a byte-level BPE vocabulary.
result<hf_tokenizer_sources> bpe_sources(const gguf_vocab& v, const pre_tokenizer_row& row) {
  json vocab = json::object();
  json added = json::array();
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    if (!is_valid_utf8(v.tokens[i])) {
      return make_error(errc::corrupt_file, "GGUF tokenizer: token " + std::to_string(i) + " is not valid UTF-8");
    }
    const auto type = type_of(v, i);
    if (type == gguf_token_type::control || type == gguf_token_type::user_defined) {
      added.push_back({{"id", i}, {"content", v.tokens[i]}, {"special", type == gguf_token_type::control},
                       {"lstrip", false}, {"rstrip", false}, {"single_word", false}, {"normalized", false}});
    } else {
      vocab.emplace(v.tokens[i], i);
    }
  }
  for (const auto& merge : v.merges) {
    if (!is_valid_utf8(merge)) return make_error(errc::corrupt_file, "GGUF tokenizer: a merge is not valid UTF-8");
  }
  json model = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", v.merges}, {"byte_fallback", false},
                {"ignore_merges", row.ignores_merges}, {"fuse_unk", false}, {"unk_token", nullptr}};
  json root = {{"model", std::move(model)},
               {"normalizer", row.is_nfc ? json{{"type", "NFC"}} : json()},
               {"pre_tokenizer", pre_tokenizer_json(row)},
               {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
               {"added_tokens", std::move(added)}};
  json config = {{"add_bos_token", v.adds_bos()}, {"bos_token", v.bos_id ? json(v.token_text(v.bos_id)) : json()}};
  if (v.eos_id) config["eos_token"] = v.token_text(v.eos_id);
  return hf_tokenizer_sources{root.dump(), config.dump(), {}};
}

result<std::shared_ptr<const tokenizer>> make_bpe(const gguf_vocab& v) {
  const auto* row = find_pre_tokenizer(v.pre);
  if (row == nullptr) {
    return make_error(errc::unsupported, "GGUF tokenizer: pre-tokenizer '" + v.pre +
                                             "' (tokenizer.ggml.pre) is not supported; supported: " + pre_tokenizer_names());
  }
  if (v.merges.empty()) return make_error(errc::corrupt_file, "GGUF tokenizer: gpt2 model without tokenizer.ggml.merges");
  auto sources = bpe_sources(v, *row);
  if (!sources) return std::unexpected(sources.error());
  auto tok = hf_tokenizer::try_from_json(*sources);
  if (!tok) return make_error(tok.error().code, "GGUF tokenizer: " + tok.error().message);
  return std::shared_ptr<const tokenizer>(std::move(*tok));
}

}  // namespace

result<std::shared_ptr<const tokenizer>> try_make_gguf_tokenizer(const gguf_vocab& vocab) {
  if (!vocab.scores.empty() && vocab.scores.size() != vocab.tokens.size()) {
    return make_error(errc::corrupt_file, "GGUF tokenizer: scores and tokens differ in number");
  }
  if (!vocab.token_types.empty() && vocab.token_types.size() != vocab.tokens.size()) {
    return make_error(errc::corrupt_file, "GGUF tokenizer: token types and tokens differ in number");
  }
  if (vocab.model == "llama") return make_spm(vocab);
  if (vocab.model == "gpt2") return make_bpe(vocab);
  return make_error(errc::unsupported, "GGUF tokenizer model '" + vocab.model +
                                           "' (tokenizer.ggml.model) is not supported; supported: llama, gpt2");
}

}  // namespace inflight
