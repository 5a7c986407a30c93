#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "core/model/tokenizer/tokenizer.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

namespace {

using tokenizer_ptr = std::unique_ptr<llama2c_tokenizer>;

tokenizer_ptr load_shared(const std::string& relative, int vocab_size) {
  const auto path = inflight::test::shared_file(relative);
  if (path.empty()) return nullptr;
  auto tok = llama2c_tokenizer::load(path, vocab_size);
  REQUIRE(tok.has_value());
  return std::move(*tok);
}

tokenizer_ptr load_tok512() { return load_shared("models/stories260K/tok512.bin", 512); }
tokenizer_ptr load_tok32k() {
  return load_shared("models/llama2c-tokenizer-32k/tokenizer.bin", 32000);
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::filesystem::path write_temp(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() / "inflight_llama2c_tokenizer_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

/// The bytes of a tokenizer.bin holding `tokens` (score, piece) after the three specials.
std::string make_tokenizer_bytes(const std::vector<std::pair<float, std::string>>& tokens) {
  std::vector<std::pair<float, std::string>> all = {{0.0f, "<unk>"}, {0.0f, "<s>"}, {0.0f, "</s>"}};
  all.insert(all.end(), tokens.begin(), tokens.end());
  std::int32_t max_len = 0;
  for (const auto& [score, piece] : all) max_len = std::max(max_len, static_cast<std::int32_t>(piece.size()));
  std::string out(reinterpret_cast<const char*>(&max_len), 4);
  for (const auto& [score, piece] : all) {
    const auto len = static_cast<std::int32_t>(piece.size());
    out.append(reinterpret_cast<const char*>(&score), 4);
    out.append(reinterpret_cast<const char*>(&len), 4);
    out += piece;
  }
  return out;
}

/// Every piece and its id (the lowest id when a piece repeats), built from piece().
std::map<std::string, token_id> piece_ids(const llama2c_tokenizer& tok) {
  std::map<std::string, token_id> ids;
  for (token_id i = tok.vocab_size() - 1; i >= 0; --i) ids[tok.piece(i)] = i;
  return ids;
}

/// llama2.c run.c encode(), transcribed literally: the O(n^2) rescan for the best pair.
std::vector<token_id> reference_encode(const llama2c_tokenizer& tok,
                                       const std::map<std::string, token_id>& ids,
                                       const std::string& text, bool add_bos) {
  auto lookup = [&](const std::string& s) { auto it = ids.find(s); return it == ids.end() ? -1 : it->second; };
  std::vector<token_id> tokens;
  if (add_bos) tokens.push_back(1);
  if (!text.empty()) tokens.push_back(lookup(" "));
  std::string buffer;
  auto is_cont = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!is_cont(text[i])) buffer.clear();
    buffer += text[i];
    if (i + 1 < text.size() && is_cont(text[i + 1]) && buffer.size() < 4) continue;
    const token_id id = lookup(buffer);
    if (id != -1) tokens.push_back(id);
    else for (unsigned char b : buffer) tokens.push_back(b + 3);
    buffer.clear();
  }
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      const token_id id = lookup(tok.piece(tokens[i]) + tok.piece(tokens[i + 1]));
      if (id != -1 && tok.score(id) > best_score) {
        best_score = tok.score(id);
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  return tokens;
}

std::string decode_all(const tokenizer& tok, const std::vector<token_id>& ids, token_id prev) {
  incremental_decoder dec(tok, prev);
  std::string out;
  for (token_id id : ids) {
    const std::string delta = dec.push(id);
    REQUIRE(is_valid_utf8(delta));
    out += delta;
  }
  return out + dec.flush();
}

/// Random text: words the small vocabulary merges, spaces, multi-byte characters and,
/// when `allow_invalid`, raw bytes (which need not form valid UTF-8).
std::string random_text(std::mt19937& rng, bool allow_invalid) {
  static const std::vector<std::string> parts = {
      "Once", "upon", "a", "time", "there", "was", "little", "girl", "named", "Lily", " ",
      " ", "  ", ".", ",", "!", "\n", "e", "th", "q", "Z", "é", "你", "好", "，", "🦙", "🚀",
      "\t", "\x01", "ing", "ed", "the", "The"};
  std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
  std::uniform_int_distribution<int> length(0, 24), byte(0, 255), coin(0, 9);
  std::string out;
  for (int i = length(rng); i > 0; --i) {
    if (allow_invalid && coin(rng) == 0) out += static_cast<char>(byte(rng));
    else out += parts[pick(rng)];
  }
  return out;
}

}  // namespace

TEST_CASE("llama2c tokenizer loads tok512.bin", "[core][tokenizer][llama2c]") {
  auto tok = load_tok512();
  if (!tok) return;
  CHECK(tok->vocab_size() == 512);
  CHECK(tok->max_token_length() == 7);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_ids() == std::vector<token_id>{2});
  CHECK(tok->adds_bos());
  CHECK(tok->piece(0) == "<unk>");
  CHECK(tok->piece(1) == "\n<s>\n");
  CHECK(tok->piece(2) == "\n</s>\n");
  CHECK(tok->piece(3) == "<0x00>");
  CHECK(tok->piece(258) == "<0xFF>");
  CHECK(tok->find(" ") == 410);
  CHECK(tok->find("no such piece") == std::nullopt);
  CHECK(tok->piece(512).empty());
  CHECK(tok->piece(-1).empty());

  // Without a model, the vocabulary runs to the end of the file: the same 512 tokens.
  auto inferred = llama2c_tokenizer::load(inflight::test::shared_file("models/stories260K/tok512.bin"));
  REQUIRE(inferred.has_value());
  REQUIRE((*inferred)->vocab_size() == 512);
  for (token_id i = 0; i < 512; ++i) {
    REQUIRE((*inferred)->piece(i) == tok->piece(i));
    REQUIRE((*inferred)->score(i) == tok->score(i));
  }
}

TEST_CASE("llama2c tokenizer load errors are values", "[core][tokenizer][llama2c]") {
  auto missing = llama2c_tokenizer::load("/nonexistent/tokenizer.bin", 512);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == errc::not_found);

  auto directory = llama2c_tokenizer::load(std::filesystem::temp_directory_path(), 512);
  REQUIRE_FALSE(directory.has_value());
  CHECK(directory.error().code == errc::io_error);

  const auto path = inflight::test::shared_file("models/stories260K/tok512.bin");
  if (path.empty()) return;
  auto too_many = llama2c_tokenizer::load(path, 32000);  // a model that does not match
  REQUIRE_FALSE(too_many.has_value());
  CHECK(too_many.error().code == errc::corrupt_file);
  CHECK(too_many.error().message.find(path.string()) != std::string::npos);
  auto off_by_one = llama2c_tokenizer::load(path, 513);
  REQUIRE_FALSE(off_by_one.has_value());
  CHECK(off_by_one.error().code == errc::corrupt_file);
  auto tiny = llama2c_tokenizer::load(path, 2);
  REQUIRE_FALSE(tiny.has_value());
  CHECK(tiny.error().code == errc::invalid_argument);
  auto prefix = llama2c_tokenizer::load(path, 300);  // trailing tokens are ignored, as in run.c
  REQUIRE(prefix.has_value());
  CHECK((*prefix)->vocab_size() == 300);
}

TEST_CASE("llama2c tokenizer refuses every truncation of tok512.bin", "[core][tokenizer][llama2c]") {
  auto full = load_tok512();
  if (!full) return;
  const std::string bytes = read_bytes(inflight::test::shared_file("models/stories260K/tok512.bin"));
  // Offsets where token k starts: truncating there leaves a shorter, well-formed file.
  std::map<std::size_t, int> boundaries;
  std::size_t offset = 4;
  for (token_id k = 0; k < 512; ++k) {
    boundaries[offset] = k;
    offset += 8 + full->piece(k).size();
  }
  REQUIRE(offset == bytes.size());
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    const std::string_view cut(bytes.data(), len);
    auto with_size = llama2c_tokenizer::parse(cut, 512);
    REQUIRE_FALSE(with_size.has_value());
    REQUIRE(with_size.error().code == errc::corrupt_file);
    auto inferred = llama2c_tokenizer::parse(cut, std::nullopt);
    const auto at = boundaries.find(len);
    const bool is_whole_tokens = at != boundaries.end() && at->second >= 3;
    INFO("truncated to " << len << " bytes");
    REQUIRE(inferred.has_value() == is_whole_tokens);
    if (is_whole_tokens) {
      REQUIRE((*inferred)->vocab_size() == at->second);
      REQUIRE((*inferred)->piece(at->second - 1) == full->piece(at->second - 1));
    } else {
      REQUIRE(inferred.error().code == errc::corrupt_file);
    }
  }
  for (std::size_t len : {std::size_t{0}, std::size_t{3}, std::size_t{100}, bytes.size() - 1}) {
    const auto path = write_temp("truncated_" + std::to_string(len) + ".bin", bytes.substr(0, len));
    auto tok = llama2c_tokenizer::load(path, 512);
    REQUIRE_FALSE(tok.has_value());
    CHECK(tok.error().code == errc::corrupt_file);
  }
}

TEST_CASE("llama2c tokenizer refuses garbage without crashing", "[core][tokenizer][llama2c]") {
  auto header = [](std::int32_t max_len, float score, std::int32_t len) {
    std::string s(12, '\0');
    std::memcpy(s.data(), &max_len, 4);
    std::memcpy(s.data() + 4, &score, 4);
    std::memcpy(s.data() + 8, &len, 4);
    return s;
  };
  const std::string payload(64, 'x');
  CHECK(llama2c_tokenizer::parse(header(-5, 0.0f, 1) + payload, std::nullopt).error().code == errc::corrupt_file);
  CHECK(llama2c_tokenizer::parse(header(0, 0.0f, 1) + payload, std::nullopt).error().code == errc::corrupt_file);
  CHECK(llama2c_tokenizer::parse(header(8, 0.0f, -1) + payload, std::nullopt).error().code == errc::corrupt_file);
  CHECK(llama2c_tokenizer::parse(header(8, 0.0f, 9) + payload, std::nullopt).error().code == errc::corrupt_file);
  CHECK(llama2c_tokenizer::parse(header(0x7fffffff, 0.0f, 0x7fffffff) + payload, std::nullopt).error().code == errc::corrupt_file);
  CHECK(llama2c_tokenizer::parse(header(8, std::nanf(""), 1) + payload, std::nullopt).error().code == errc::corrupt_file);
  // Well-formed but fewer than the three special tokens.
  CHECK(llama2c_tokenizer::parse(header(8, 0.0f, 1) + "a", std::nullopt).error().code == errc::corrupt_file);
  // Three special tokens and nothing else: no " " for the dummy prefix, no byte tokens.
  const std::string three_tokens = header(8, 0.0f, 1) + "u" + header(8, 0.0f, 1).substr(4) + "s" +
                                   header(8, 0.0f, 1).substr(4) + "e";
  auto three = llama2c_tokenizer::parse(three_tokens, std::nullopt);
  REQUIRE(three.has_value());
  CHECK((*three)->vocab_size() == 3);
  CHECK((*three)->encode("ab", true) == std::vector<token_id>{1, 0, 0});

  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> byte(0, 255), size(0, 400);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string garbage(static_cast<std::size_t>(size(rng)), '\0');
    for (char& c : garbage) c = static_cast<char>(byte(rng));
    if (iter % 3 == 0 && garbage.size() >= 4) garbage[1] = garbage[2] = garbage[3] = 0;  // plausible header
    for (std::optional<int> vocab : {std::optional<int>{}, std::optional<int>{512}, std::optional<int>{3}}) {
      auto tok = llama2c_tokenizer::parse(garbage, vocab);
      if (!tok) {
        REQUIRE(tok.error().code == errc::corrupt_file);
        continue;
      }
      for (token_id i = 0; i < (*tok)->vocab_size(); ++i) {
        REQUIRE(static_cast<int>((*tok)->piece(i).size()) <= (*tok)->max_token_length());
      }
      for (token_id id : (*tok)->encode("garbage in", true)) REQUIRE(id < (*tok)->vocab_size());
    }
  }
  auto file = llama2c_tokenizer::load(write_temp("garbage.bin", std::string(1000, '\xff')), 512);
  REQUIRE_FALSE(file.has_value());
  CHECK(file.error().code == errc::corrupt_file);
}

TEST_CASE("llama2c encode matches run.c on Once upon a time", "[core][tokenizer][llama2c]") {
  auto tok = load_tok512();
  if (!tok) return;
  const std::string text = "Once upon a time";
  const auto ids = tok->encode(text, true);
  CHECK(ids == reference_encode(*tok, piece_ids(*tok), text, true));
  CHECK(ids == std::vector<token_id>{1, 403, 407, 261, 378});
  REQUIRE(ids.size() >= 2);
  CHECK(ids[0] == 1);
  CHECK(tok->piece(ids[1]).starts_with(" "));  // the dummy prefix merged into the first word
  CHECK(tok->piece(ids[1]) == " Once");
  CHECK(tok->encode(text, false) == std::vector<token_id>(ids.begin() + 1, ids.end()));
  CHECK(tok->encode("", true) == std::vector<token_id>{1});
  CHECK(tok->encode("", false).empty());
  // A character the vocabulary lacks: dummy " ", then its three bytes as byte tokens.
  CHECK(tok->encode("你", false) == std::vector<token_id>{410, 0xE4 + 3, 0xBD + 3, 0xA0 + 3});

  auto big = load_tok32k();
  if (!big) return;
  CHECK(big->vocab_size() == 32000);
  CHECK(big->encode(text, true) == std::vector<token_id>{1, 9038, 2501, 263, 931});
  CHECK(big->encode(text, true) == reference_encode(*big, piece_ids(*big), text, true));
}

TEST_CASE("llama2c queue-based merging equals the O(n^2) rescan", "[core][tokenizer][llama2c]") {
  std::mt19937 rng(99);
  for (auto& tok : {load_tok512(), load_tok32k()}) {
    if (!tok) continue;
    const auto ids = piece_ids(*tok);
    for (int iter = 0; iter < 400; ++iter) {
      const std::string text = random_text(rng, iter % 2 == 1);
      const bool add_bos = iter % 3 != 0;
      INFO("vocab " << tok->vocab_size() << ", text '" << text << "'");
      REQUIRE(tok->encode(text, add_bos) == reference_encode(*tok, ids, text, add_bos));
    }
  }
}

TEST_CASE("llama2c token_bytes follows run.c decode", "[core][tokenizer][llama2c]") {
  auto tok = load_tok512();
  if (!tok) return;
  CHECK(tok->token_bytes(5, 403) == " Once");
  CHECK(tok->token_bytes(1, 403) == "Once");        // after BOS the leading space goes
  CHECK(tok->token_bytes(1, 410).empty());          // the dummy prefix alone
  CHECK(tok->token_bytes(5, 0x0A + 3) == "\n");      // <0x0A> is its byte
  CHECK(tok->token_bytes(1, 0x20 + 3) == " ");       // <0x20> is not a piece starting with ' '
  CHECK(tok->token_bytes(5, 0xE4 + 3) == "\xE4");
  CHECK(tok->token_bytes(5, 1).empty());
  CHECK(tok->token_bytes(5, 2).empty());
  CHECK(tok->token_bytes(5, 512).empty());
  CHECK(tok->token_bytes(5, -3).empty());
  CHECK(tok->piece(0x0A + 3) == "<0x0A>");
}

TEST_CASE("llama2c BOS and EOS decode to nothing whatever their piece", "[core][tokenizer][llama2c]") {
  // Pieces starting with a space: after BOS that space is cut, and cutting it from the
  // empty text of BOS / EOS threw std::out_of_range.
  std::string bytes(4, '\0');
  bytes[0] = 5;  // max_token_length
  for (const std::string piece : {"<unk>", " <s>", " </s>", " a"}) {
    const std::int32_t len = static_cast<std::int32_t>(piece.size());
    bytes.append(4, '\0');  // score 0
    bytes.append(reinterpret_cast<const char*>(&len), 4);
    bytes += piece;
  }
  auto tok = llama2c_tokenizer::parse(bytes, std::nullopt);
  REQUIRE(tok.has_value());
  REQUIRE((*tok)->piece(1) == " <s>");
  CHECK((*tok)->token_bytes(1, 1).empty());
  CHECK((*tok)->token_bytes(1, 3) == "a");
  incremental_decoder dec(**tok);
  CHECK(dec.push(1).empty());
  CHECK(dec.push(1).empty());
  CHECK(dec.push(3) == "a");
}

TEST_CASE("llama2c encode then incremental decode gives the text back", "[core][tokenizer][llama2c]") {
  const std::vector<std::string> texts = {
      "Once upon a time", "Lily and Ben went to the park.\nThe end!", " leading space",
      "two  spaces   and tabs\t\t", "你好，世界", "🦙🚀", "\x01\x02 control \x7f bytes",
      "mixed 🦙 llama, 你好 and é", "\n", " ", "x"};
  std::mt19937 rng(5);
  for (auto& tok : {load_tok512(), load_tok32k()}) {
    if (!tok) continue;
    std::vector<std::string> all = texts;
    for (int i = 0; i < 200; ++i) all.push_back(random_text(rng, false));
    for (const std::string& text : all) {
      INFO("vocab " << tok->vocab_size() << ", text '" << text << "'");
      // After BOS the dummy prefix's space is dropped, leaving exactly the text.
      REQUIRE(decode_all(*tok, tok->encode(text, false), llama2c_tokenizer::bos_token) == text);
      REQUIRE(decode_all(*tok, tok->encode(text, true), -1) == text);
    }
  }
}

TEST_CASE("llama2c merging breaks score ties leftmost, as run.c", "[core][tokenizer][llama2c]") {
  // ids: 3 " ", 4 "a", 5 "b", 6 "c", 7 "aa", 8 "ab", 9 "bc"
  auto tok = llama2c_tokenizer::parse(
      make_tokenizer_bytes({{0.0f, " "}, {0.0f, "a"}, {0.0f, "b"}, {0.0f, "c"},
                            {-1.0f, "aa"}, {-1.0f, "ab"}, {-1.0f, "bc"}}),
      std::nullopt);
  REQUIRE(tok.has_value());
  CHECK((*tok)->encode("aaa", false) == std::vector<token_id>{3, 7, 4});
  CHECK((*tok)->encode("abc", false) == std::vector<token_id>{3, 8, 6});
  CHECK((*tok)->encode("aaaa", false) == std::vector<token_id>{3, 7, 7});
  CHECK((*tok)->encode("aab", false) == std::vector<token_id>{3, 7, 5});
}

TEST_CASE("llama2c merging equals the rescan on a vocabulary full of ties", "[core][tokenizer][llama2c]") {
  // Every string over {a, b} up to length 3 is a piece, scores from {0, -1, -2}.
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> score(-2, 0), length(0, 30), letter(0, 2);
  for (int vocab_iter = 0; vocab_iter < 20; ++vocab_iter) {
    std::vector<std::pair<float, std::string>> tokens = {{0.0f, " "}};
    for (int len = 1; len <= 3; ++len) {
      for (int bits = 0; bits < (1 << len); ++bits) {
        std::string piece;
        for (int k = 0; k < len; ++k) piece += (bits >> k) & 1 ? 'b' : 'a';
        if (len == 1 || score(rng) < 0) tokens.emplace_back(static_cast<float>(score(rng)), piece);
      }
    }
    tokens.emplace_back(-1.0f, " a");
    auto tok = llama2c_tokenizer::parse(make_tokenizer_bytes(tokens), std::nullopt);
    REQUIRE(tok.has_value());
    const auto ids = piece_ids(**tok);
    for (int iter = 0; iter < 200; ++iter) {
      std::string text;
      for (int i = length(rng); i > 0; --i) text += "ab "[letter(rng)];
      INFO("text '" << text << "'");
      REQUIRE((*tok)->encode(text, true) == reference_encode(**tok, ids, text, true));
    }
  }
}
