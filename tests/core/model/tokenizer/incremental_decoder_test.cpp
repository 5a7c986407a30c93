#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "core/model/tokenizer/tokenizer.hpp"
#include "core/model/tokenizer/utf8.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

namespace {

const std::string fffd = "\xEF\xBF\xBD";

/// Token t < 256 is the single byte t; a stand-in that isolates the decoder's logic.
class raw_byte_tokenizer final : public tokenizer {
 public:
  std::vector<token_id> encode(std::string_view text, bool) const override {
    std::vector<token_id> ids;
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  std::string token_bytes(token_id, token_id token) const override {
    return std::string(1, static_cast<char>(token));
  }
  std::string piece(token_id token) const override { return token_bytes(-1, token); }
  int vocab_size() const override { return 256; }
  std::optional<token_id> bos_id() const override { return std::nullopt; }
  std::vector<token_id> eos_ids() const override { return {}; }
};

/// Straightforward decoder used as the reference: decode a code point from its bit
/// pattern, then reject overlongs, surrogates and values past U+10FFFF.
bool reference_is_valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (b < 0x80) { len = 1; cp = b; }
    else if ((b >> 5) == 0x6) { len = 2; cp = b & 0x1F; }
    else if ((b >> 4) == 0xE) { len = 3; cp = b & 0x0F; }
    else if ((b >> 3) == 0x1E) { len = 4; cp = b & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<std::uint8_t>(s[i + k]);
      if ((c >> 6) != 0x2) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

std::string encode_code_point(std::uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

std::string random_valid_utf8(std::mt19937& rng, int num_chars) {
  std::uniform_int_distribution<int> kind(0, 3);
  std::string out;
  for (int i = 0; i < num_chars; ++i) {
    std::uint32_t cp = 0;
    switch (kind(rng)) {
      case 0: cp = std::uniform_int_distribution<std::uint32_t>(0x01, 0x7F)(rng); break;
      case 1: cp = std::uniform_int_distribution<std::uint32_t>(0x80, 0x7FF)(rng); break;
      case 2: cp = std::uniform_int_distribution<std::uint32_t>(0xE000, 0xFFFF)(rng); break;
      default: cp = std::uniform_int_distribution<std::uint32_t>(0x10000, 0x10FFFF)(rng); break;
    }
    out += encode_code_point(cp);
  }
  return out;
}

/// Random bytes biased towards the bytes where UTF-8 validity is decided.
std::string random_tricky_bytes(std::mt19937& rng, int num_bytes) {
  static const std::uint8_t interesting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                             0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE4, 0xED,
                                             0xEF, 0xF0, 0xF4, 0xF5, 0xFF};
  std::uniform_int_distribution<int> pick(0, static_cast<int>(std::size(interesting)));
  std::uniform_int_distribution<int> any(0, 255);
  std::string out;
  for (int i = 0; i < num_bytes; ++i) {
    const int k = pick(rng);
    out += static_cast<char>(k == static_cast<int>(std::size(interesting)) ? any(rng)
                                                                          : interesting[k]);
  }
  return out;
}

std::vector<std::string> push_all(incremental_decoder& dec, const std::vector<token_id>& ids) {
  std::vector<std::string> outs;
  for (token_id id : ids) outs.push_back(dec.push(id));
  outs.push_back(dec.flush());
  return outs;
}

}  // namespace

TEST_CASE("complete_utf8_prefix stops before an unfinished character", "[core][tokenizer][utf8]") {
  CHECK(complete_utf8_prefix("") == 0);
  CHECK(complete_utf8_prefix("abc") == 3);
  CHECK(complete_utf8_prefix("a\xE4\xBD") == 1);
  CHECK(complete_utf8_prefix("\xE4\xBD\xA0") == 3);
  CHECK(complete_utf8_prefix("\xF0\x9F\xA6") == 0);
  CHECK(complete_utf8_prefix("\xF0\x9F\xA6\x99") == 4);
  // Bytes that can never become valid count as complete (emitted as U+FFFD).
  CHECK(complete_utf8_prefix("\xFF") == 1);
  CHECK(complete_utf8_prefix("\x80") == 1);
  CHECK(complete_utf8_prefix("\xE4\x41") == 2);
  CHECK(complete_utf8_prefix("\xE4\x41\xE4") == 2);
  CHECK(complete_utf8_prefix("\xC0") == 1);      // C0 only starts overlongs
  CHECK(complete_utf8_prefix("\xED\xA0") == 2);  // a surrogate can never complete
  CHECK(complete_utf8_prefix("\xF4\x90") == 2);  // past U+10FFFF
}

TEST_CASE("is_valid_utf8 rejects overlongs, surrogates and out-of-range", "[core][tokenizer][utf8]") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("你好，世界 🦙🚀"));
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));   // U+10FFFF
  CHECK(is_valid_utf8("\xEE\x80\x80"));       // U+E000, right after the surrogates
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));     // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xE0\x80\xAF")); // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xF0\x80\x80\xAF"));
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80")); // U+D800
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // U+110000
  CHECK_FALSE(is_valid_utf8("\xF5\x80\x80\x80"));
  CHECK_FALSE(is_valid_utf8("\xE4\xBD"));     // truncated
  CHECK_FALSE(is_valid_utf8("\xBF"));         // lone continuation
  CHECK_FALSE(is_valid_utf8("\xFF"));
}

TEST_CASE("is_valid_utf8 agrees with a reference decoder on random bytes", "[core][tokenizer][utf8]") {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string s = random_tricky_bytes(rng, iter % 9);
    INFO("iteration " << iter);
    REQUIRE(is_valid_utf8(s) == reference_is_valid_utf8(s));
    const std::string fixed = to_valid_utf8(s);
    REQUIRE(is_valid_utf8(fixed));
    if (is_valid_utf8(s)) REQUIRE(fixed == s);
  }
  for (int iter = 0; iter < 2000; ++iter) {
    REQUIRE(is_valid_utf8(random_valid_utf8(rng, iter % 12)));
  }
}

TEST_CASE("to_valid_utf8 replaces each maximal invalid subpart once", "[core][tokenizer][utf8]") {
  CHECK(to_valid_utf8("a\xFF" "b") == "a" + fffd + "b");
  CHECK(to_valid_utf8("\xE4\xBD" "A") == fffd + "A");  // one subpart, one U+FFFD
  CHECK(to_valid_utf8("\xE4\xBD\xE4\xBD") == fffd + fffd);
  CHECK(to_valid_utf8("\xC0\xAF") == fffd + fffd);     // C0 starts nothing
  CHECK(to_valid_utf8("\xF0\x9F\xA6") == fffd);
}

TEST_CASE("incremental_decoder holds a character until it completes", "[core][tokenizer][decoder]") {
  raw_byte_tokenizer tok;
  incremental_decoder dec(tok);
  CHECK(dec.push(0xE4) == "");
  CHECK(dec.push(0xBD) == "");
  CHECK(dec.push(0xA0) == "你");
  CHECK(dec.push('!') == "!");
  CHECK(dec.push(0xF0) == "");
  CHECK(dec.push(0x9F) == "");
  CHECK(dec.push(0xA6) == "");
  CHECK(dec.push(0x99) == "🦙");
  CHECK(dec.flush() == "");
}

TEST_CASE("incremental_decoder emits U+FFFD for bytes that cannot complete", "[core][tokenizer][decoder]") {
  raw_byte_tokenizer tok;
  incremental_decoder dec(tok);
  CHECK(dec.push(0xFF) == fffd);            // not held: no continuation can fix it
  CHECK(dec.push(0xE4) == "");
  CHECK(dec.push('A') == fffd + "A");       // broken by a non-continuation byte
  CHECK(dec.push(0xED) == "");
  CHECK(dec.push(0xA0) == fffd + fffd);     // surrogate: ED and A0 are two subparts
  CHECK(dec.push(0xE4) == "");
  CHECK(dec.push(0xBD) == "");
  CHECK(dec.flush() == fffd);               // unfinished at the end
  CHECK(dec.flush() == "");
}

TEST_CASE("incremental_decoder output equals batch decoding, always valid", "[core][tokenizer][decoder]") {
  raw_byte_tokenizer tok;
  std::mt19937 rng(11);
  for (int iter = 0; iter < 3000; ++iter) {
    const bool is_text = iter % 2 == 0;
    const std::string bytes = is_text ? random_valid_utf8(rng, iter % 20)
                                      : random_tricky_bytes(rng, iter % 30);
    incremental_decoder dec(tok);
    std::string joined;
    for (const std::string& out : push_all(dec, tok.encode(bytes, false))) {
      REQUIRE(is_valid_utf8(out));
      joined += out;
    }
    INFO("iteration " << iter);
    REQUIRE(joined == to_valid_utf8(bytes));
    if (is_text) REQUIRE(joined == bytes);
  }
}

TEST_CASE("incremental_decoder over llama2.c byte tokens of multi-byte characters", "[core][tokenizer][decoder]") {
  const auto path = inflight::test::shared_file("models/stories260K/tok512.bin");
  if (path.empty()) return;
  auto tok = llama2c_tokenizer::load(path, 512);
  REQUIRE(tok.has_value());
  for (const std::string text : {"🦙", "你", "é", "\xF4\x8F\xBF\xBF"}) {
    incremental_decoder dec(**tok);
    std::string joined;
    for (unsigned char byte : text) {
      const std::string out = dec.push(static_cast<token_id>(byte) + 3);
      REQUIRE(is_valid_utf8(out));
      joined += out;
      // Nothing shows up before the character's last byte.
      if (joined.size() < text.size()) CHECK(joined.empty());
    }
    CHECK(dec.flush() == "");
    CHECK(joined == text);
  }
  // Any token stream at all, including special and byte tokens, decodes to valid UTF-8.
  std::mt19937 rng(3);
  std::uniform_int_distribution<token_id> any_token(0, 511);
  incremental_decoder dec(**tok, llama2c_tokenizer::bos_token);
  for (int i = 0; i < 5000; ++i) REQUIRE(is_valid_utf8(dec.push(any_token(rng))));
  REQUIRE(is_valid_utf8(dec.flush()));
}
