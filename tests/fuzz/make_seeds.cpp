// Writes the generated seeds of the fuzz corpora with the project's own writers (the
// hand-written seeds live next to them): `inflight_fuzz_seeds tests/fuzz/corpus`.
// Seeds stay small (a few KB) so that the corpus can live in the repository.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/formats/safetensors.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::cerr << "cannot write " << path << "\n";
    std::exit(1);
  }
}

void check(const result<void>& r) {
  if (!r) {
    std::cerr << r.error().message << "\n";
    std::exit(1);
  }
}

void safetensors_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const std::vector<float> values{0.5f, -1.0f, 2.0f, 0.0f, 3.25f, -0.125f};
  const std::vector<tensor_to_write> one{{"w", {2, 3}, values, tensor_dtype::f32}};
  check(try_write_safetensors(dir / "seed-f32", one, {{"format", "pt"}}));
  const std::vector<tensor_to_write> mixed{{"a", {3}, std::span(values).first(3), tensor_dtype::bf16},
                                           {"b", {1, 3}, std::span(values).last(3), tensor_dtype::f16},
                                           {"empty", {0, 4}, {}, tensor_dtype::f32}};
  check(try_write_safetensors(dir / "seed-mixed", mixed));
}

void llama2c_checkpoint_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  auto c = test::small_config({.dim = 8, .hidden = 16, .layers = 1, .heads = 2, .kv_heads = 1, .vocab = 8, .max_seq_len = 4});
  c.architecture = "llama2.c";
  for (bool tied : {true, false}) {
    c.tied_embeddings = tied;
    auto w = make_dummy_weights(c, 1);
    if (!w) check(std::unexpected(w.error()));
    check(write_llama2c(*w, dir / (tied ? "seed-tied" : "seed-untied")));
  }
}

/// tokenizer.bin as llama2.c's tokenizer.py writes it: <unk> <s> </s>, 256 byte tokens,
/// then merged pieces with scores.
std::string llama2c_tokenizer_bytes(const std::vector<std::string>& extra) {
  std::vector<std::string> pieces{"<unk>", "\n<s>\n", "\n</s>\n"};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    pieces.push_back(name);
  }
  pieces.insert(pieces.end(), extra.begin(), extra.end());
  std::int32_t max_len = 0;
  for (const auto& p : pieces) max_len = std::max<std::int32_t>(max_len, std::int32_t(p.size()));
  std::string out(reinterpret_cast<const char*>(&max_len), 4);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const float score = i < 259 ? 0.0f : -float(i - 259);
    const auto len = std::int32_t(pieces[i].size());
    out.append(reinterpret_cast<const char*>(&score), 4);
    out.append(reinterpret_cast<const char*>(&len), 4);
    out += pieces[i];
  }
  return out;
}

void llama2c_tokenizer_seeds(const fs::path& dir) {
  const std::string meta = "\xE2\x96\x81";  // the sentencepiece space
  const std::vector<std::string> extra{meta, "e", "n", "o", "t", meta + "t", "on", meta + "on", "ce", meta + "o",
                                       "nce", meta + "once"};
  const std::string bytes = llama2c_tokenizer_bytes(extra);
  for (int vocab : {271, 262}) {
    const std::string prefix{char(vocab & 0xff), char(vocab >> 8)};
    write_file(dir / ("seed-vocab" + std::to_string(vocab)), prefix + bytes);
  }
}

/// A TemplateProcessing post-processor that puts `bos` before a single sequence.
json template_processing(const std::string& bos) {
  const json special = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
  const json sequence = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};
  return {{"type", "TemplateProcessing"}, {"single", json::array({special, sequence})}};
}

json byte_level_tokenizer() {
  // GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the
  // rest map to U+0100 onwards.
  json vocab = json::object();
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool is_printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    const int cp = is_printable ? b : next++;
    std::string ch;
    if (cp < 0x80) {
      ch = char(cp);
    } else {
      ch = {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    }
    vocab[ch] = b;
  }
  vocab["\xC4\xA0" "t"] = 256;
  vocab["he"] = 257;
  vocab["\xC4\xA0" "the"] = 258;
  return {{"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he"}}, {"ignore_merges", false}}},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
          {"post_processor", template_processing("<|begin_of_text|>")},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"added_tokens",
           {{{"id", 259}, {"content", "<|begin_of_text|>"}, {"special", true}},
            {{"id", 260}, {"content", "<|eot_id|>"}, {"special", true}},
            {{"id", 261}, {"content", "<tool>"}, {"special", false}, {"lstrip", true}, {"rstrip", true}}}}};
}

json sentencepiece_tokenizer() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  const std::string meta = "\xE2\x96\x81";
  vocab[meta] = 259;
  vocab["h"] = 260;
  vocab["i"] = 261;
  vocab[meta + "h"] = 262;
  vocab[meta + "hi"] = 263;
  json added = json::array();
  for (int id = 0; id < 3; ++id)
    added.push_back({{"id", id}, {"content", id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>"}, {"special", true}});
  return {{"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", {meta + " h", meta + "h i"}}, {"unk_token", "<unk>"},
            {"byte_fallback", true}, {"fuse_unk", true}}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", meta}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}}}}},
          {"pre_tokenizer", nullptr},
          {"post_processor", template_processing("<s>")},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"added_tokens", added}};
}

void hf_tokenizer_seeds(const fs::path& dir) {
  const std::string nul(1, '\0');
  const json llama3_config = {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"},
                              {"chat_template", "{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
                                                "<|end_header_id|>\n\n{{ message['content'] }}<|eot_id|>{% endfor %}"}};
  write_file(dir / "seed-byte-level", byte_level_tokenizer().dump());
  write_file(dir / "seed-byte-level-config",
             byte_level_tokenizer().dump() + nul + llama3_config.dump() + nul + json{{"eos_token_id", {260, 2}}}.dump());
  const json sp_config = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}}, {"eos_token", "</s>"},
                          {"add_bos_token", true}};
  write_file(dir / "seed-sentencepiece", sentencepiece_tokenizer().dump() + nul + sp_config.dump());
}

}  // namespace

model_config tiny_gguf_config(int dim, int vocab_size) {
  return test::small_config(
      {.dim = dim, .hidden = dim, .layers = 1, .heads = 2, .kv_heads = 1, .vocab = vocab_size, .max_seq_len = 64});
}

model_weights tiny_gguf_weights(const model_config& c, const char* recipe_name) {
  auto recipe = try_parse_recipe(recipe_name);
  if (!recipe) check(std::unexpected(recipe.error()));
  auto w = make_dummy_weights(c, 1, &*recipe);
  if (!w) check(std::unexpected(w.error()));
  return std::move(*w);
}

/// A SentencePiece vocabulary of 16 tokens: specials, a user-defined token, bytes, pieces.
gguf_vocab tiny_spm_vocab() {
  gguf_vocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "[INST]", "<0x0A>", "<0x62>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a",
              "ab", "l", "o", "lo", "\xE2\x96\x81" "lo", "x"};
  v.scores = {0, 0, 0, 0, 0, 0, -1, -2, -2, -0.5f, -0.2f, -3, -3, -1, -0.7f, -4};
  v.token_types = {2, 3, 3, 4, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5};
  v.bos_id = 1, v.eos_id = 2, v.unk_id = 0;
  v.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
  return v;
}

/// A byte-level BPE vocabulary of 8 tokens with merges.
gguf_vocab tiny_bpe_vocab(const std::string& pre) {
  gguf_vocab v;
  v.model = "gpt2";
  v.pre = pre;
  v.tokens = {"a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "a", "1", "12", "<|end|>"};
  v.token_types = {1, 1, 1, 1, 1, 1, 1, 3};
  v.merges = {"a b", "\xC4\xA0" " a", "1 2"};
  v.eos_id = 7;
  return v;
}

void gguf_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const auto spm = tiny_gguf_config(32, 16);
  check(try_write_gguf_model(tiny_gguf_weights(spm, "q8_0"), tiny_spm_vocab(), dir / "seed-llama-q8_0", {"tiny", 32}));
  auto qwen2 = tiny_gguf_config(16, 8);
  qwen2.attention_bias = true;
  qwen2.rope = rope_style::half;
  check(try_write_gguf_model(tiny_gguf_weights(qwen2, "f16"), tiny_bpe_vocab("qwen2"), dir / "seed-qwen2-f16", {}));
  auto qwen3 = tiny_gguf_config(32, 8);
  qwen3.qk_norm = true;
  qwen3.rope = rope_style::half;
  check(try_write_gguf_model(tiny_gguf_weights(qwen3, "q4_0"), tiny_bpe_vocab("llama-bpe"), dir / "seed-qwen3-q4_0", {"", 64}));
  // Metadata of every type (a nested array too) and a bf16 vector.
  gguf_writer w;
  w.set_u64("a.u64", 1);
  w.set_i32("a.i32", -1);
  w.set_f32("a.f32", 0.5f);
  w.set_bool("a.bool", true);
  std::string nested;
  const auto put = [&](auto value) { nested.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  put(std::uint32_t(gguf_type::array)), put(std::uint64_t(2));
  put(std::uint32_t(gguf_type::u16)), put(std::uint64_t(1)), put(std::uint16_t(7));
  put(std::uint32_t(gguf_type::f64)), put(std::uint64_t(1)), put(1.5);
  w.set_raw("a.nested", gguf_type::array, nested);
  check(w.try_add_matrix("v", weight_tensor::from_bytes(weight_dtype::bf16, 1, 4, std::vector<std::byte>(8))));
  check(w.try_write(dir / "seed-metadata"));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: inflight_fuzz_seeds CORPUS_DIR (tests/fuzz/corpus)\n";
    return 2;
  }
  const fs::path root = argv[1];
  safetensors_seeds(root / "safetensors");
  llama2c_checkpoint_seeds(root / "llama2c_checkpoint");
  llama2c_tokenizer_seeds(root / "llama2c_tokenizer");
  hf_tokenizer_seeds(root / "hf_tokenizer");
  gguf_seeds(root / "gguf");
  return 0;
}
