#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <random>

#include "core/base/codepoints.hpp"
#include "core/model/tokenizer/byte_level.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"
#include "core/model/tokenizer/unicode_nfc.hpp"

using inflight::errc;
using inflight::hf_tokenizer;
using inflight::token_id;
using json = nlohmann::json;

namespace {

// Byte-level BPE: ids 0..255 are the byte characters (id == byte), then merges.
json byte_level_json(bool pair_merges = false, bool ignore_merges = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[inflight::byte_level().char_of(static_cast<unsigned char>(b))] = b;
  vocab["bc"] = 256;
  vocab["ab"] = 257;
  vocab["aa"] = 258;
  vocab["\xC4\xA0" "a"] = 259;  // "Ġa"
  vocab["abcd"] = 260;
  const std::vector<std::pair<std::string, std::string>> merges{{"b", "c"}, {"a", "b"}, {"a", "a"}, {"\xC4\xA0", "a"}};
  json merge_list = json::array();
  for (const auto& [a, b] : merges) merge_list.push_back(pair_merges ? json::array({a, b}) : json(a + " " + b));
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"ignore_merges", ignore_merges}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens",
           {{{"id", 300}, {"content", "<|x|>"}, {"special", true}},
            {{"id", 301}, {"content", "<|x|>y"}, {"special", false}},
            {{"id", 302}, {"content", "<m>"}, {"special", true}, {"lstrip", true}, {"rstrip", true}}}}};
}

// Sentencepiece-style BPE as in Llama-2: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0xNN>, then pieces.
json sentencepiece_json() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  const std::string meta = "\xE2\x96\x81";
  vocab[meta] = 259;
  vocab["h"] = 260;
  vocab["i"] = 261;
  vocab[meta + "h"] = 262;
  vocab[meta + "hi"] = 263;
  json added = json::array();
  for (int id = 0; id < 3; ++id) {
    added.push_back({{"id", id}, {"content", id == 0 ? "<unk>" : id == 1 ? "<s>" : "</s>"}, {"special", true}});
  }
  return {{"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", {meta + " h", meta + "h i"}}, {"unk_token", "<unk>"},
            {"byte_fallback", true}, {"fuse_unk", true}}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", meta}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}}}}},
          {"pre_tokenizer", nullptr},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"added_tokens", added}};
}

std::unique_ptr<hf_tokenizer> load(const json& tokenizer, const json& config = nullptr, const json& generation = nullptr) {
  inflight::hf_tokenizer_sources sources{tokenizer.dump(), config.is_null() ? "" : config.dump(),
                                         generation.is_null() ? "" : generation.dump()};
  auto tok = hf_tokenizer::try_from_json(sources);
  if (!tok) FAIL(tok.error().message);
  return std::move(*tok);
}

std::unique_ptr<hf_tokenizer> sentencepiece() {
  return load(sentencepiece_json(), {{"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}}}, {"add_bos_token", true}});
}

using ids = std::vector<token_id>;

}  // namespace

TEST_CASE("byte-level BPE applies merges by rank, ties leftmost", "[core][tokenizer]") {
  auto tok = load(byte_level_json());
  // "abc": (b c) has rank 0 and wins over (a b); " aaa": (a a) beats (Ġ a), leftmost first.
  CHECK(tok->encode("abc aaa", false) == ids{97, 256, 32, 258, 97});
  CHECK(tok->encode("", false).empty());
  CHECK(tok->vocab_size() == 303);
  CHECK(tok->piece(259) == "\xC4\xA0" "a");
  CHECK(tok->token_bytes(-1, 259) == " a");
  CHECK(tok->token_to_id("ab") == 257);
}

TEST_CASE("merges as [a, b] pairs equal merges as \"a b\" strings", "[core][tokenizer]") {
  auto strings = load(byte_level_json(false));
  auto pairs = load(byte_level_json(true));
  for (const char* text : {"abc aaa", "ab ab bc", "aaaa abcd"}) CHECK(strings->encode(text, false) == pairs->encode(text, false));
}

TEST_CASE("ignore_merges takes a whole pre-token found in the vocabulary", "[core][tokenizer]") {
  CHECK(load(byte_level_json(false, true))->encode("abcd", false) == ids{260});
  CHECK(load(byte_level_json(false, false))->encode("abcd", false) == ids{97, 256, 100});
}

TEST_CASE("added tokens match leftmost-longest before BPE and are never split", "[core][tokenizer]") {
  auto tok = load(byte_level_json());
  CHECK(tok->encode("q<|x|>yz<|x|>", false) == ids{113, 301, 122, 300});
  CHECK(tok->encode("<|x", false) == ids{60, 124, 120});
  // lstrip / rstrip swallow the white space around the token.
  CHECK(tok->encode("a  <m>  b", false) == ids{97, 302, 98});
  CHECK(tok->encode("q<|x|>", inflight::encode_options{false, false}) == ids{113, 60, 124, 120, 124, 62});
  CHECK(tok->is_special(300));
  CHECK_FALSE(tok->is_special(301));
  CHECK(tok->token_bytes(97, 300).empty());
  CHECK(tok->token_bytes(97, 301) == "<|x|>y");
  const ids mixed{113, 301, 122, 300};
  CHECK(tok->decode(mixed) == "q<|x|>yz");
  CHECK(tok->decode(mixed, false) == "q<|x|>yz<|x|>");
}

TEST_CASE("sentencepiece-style BPE: prepended metaspace, byte fallback, stripped first space", "[core][tokenizer]") {
  auto tok = sentencepiece();
  CHECK(tok->adds_bos());
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_ids() == ids{2});
  CHECK(tok->encode("hi hi", true) == ids{1, 263, 263});
  // "é" is not in the vocabulary: its UTF-8 bytes C3 A9 become <0xC3> <0xA9>.
  CHECK(tok->encode("h\xC3\xA9", false) == ids{262, 3 + 0xC3, 3 + 0xA9});
  CHECK(tok->encode("hi</s>hi", false) == ids{263, 2, 263});
  CHECK(tok->token_bytes(-1, 263) == "hi");
  CHECK(tok->token_bytes(1, 263) == "hi");
  CHECK(tok->token_bytes(263, 263) == " hi");
  CHECK(tok->token_bytes(263, 3 + 0xC3) == "\xC3");
  CHECK(tok->token_bytes(263, 2).empty());
  CHECK(tok->decode(tok->encode(" hi  h\xC3\xA9", true)) == " hi  h\xC3\xA9");
}

TEST_CASE("incremental decoding holds a split character until it completes", "[core][tokenizer]") {
  auto tok = sentencepiece();
  inflight::incremental_decoder dec(*tok, 1);
  CHECK(dec.push(262) == "h");
  CHECK(dec.push(3 + 0xC3).empty());
  CHECK(dec.push(3 + 0xA9) == "\xC3\xA9");
  CHECK(dec.push(263) == " hi");
}

TEST_CASE("tokenizer_config and generation_config choose BOS / EOS", "[core][tokenizer]") {
  auto tok = load(sentencepiece_json(), {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_bos_token", false},
                                          {"chat_template", "{{ bos_token }}[INST]"}},
                  {{"eos_token_id", {2, 0}}});
  CHECK_FALSE(tok->adds_bos());
  CHECK(tok->encode("hi", true) == ids{1, 263});
  CHECK(tok->eos_ids() == ids{2, 0});
  CHECK(tok->bos_token() == "<s>");
  CHECK(tok->chat_template() == "{{ bos_token }}[INST]");
  auto bare = load(byte_level_json());
  CHECK_FALSE(bare->bos_id());
  CHECK(bare->eos_ids().empty());
  CHECK(bare->encode("a", true) == ids{97});
}

TEST_CASE("unsupported or malformed tokenizer files fail at load time", "[core][tokenizer]") {
  auto error_of = [](const json& j) {
    auto tok = hf_tokenizer::try_from_json({j.dump(), "", ""});
    REQUIRE_FALSE(tok);
    return tok.error();
  };
  json j = byte_level_json();
  j["normalizer"] = {{"type", "Lowercase"}};
  CHECK(error_of(j).code == errc::unsupported);
  CHECK(error_of(j).message.find("Lowercase") != std::string::npos);
  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  CHECK(error_of(j).code == errc::unsupported);
  j = byte_level_json();
  j["decoder"] = {{"type", "WordPiece"}};
  CHECK(error_of(j).code == errc::unsupported);
  j = byte_level_json();
  j["model"]["type"] = "Unigram";
  CHECK(error_of(j).code == errc::unsupported);
  j = byte_level_json();
  j["added_tokens"][0]["single_word"] = true;
  CHECK(error_of(j).code == errc::unsupported);
  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  CHECK(error_of(j).code == errc::corrupt_file);
  auto broken = hf_tokenizer::try_from_json({"{not json", "", ""});
  REQUIRE_FALSE(broken);
  CHECK(broken.error().code == errc::corrupt_file);
  CHECK(hf_tokenizer::try_load("/nonexistent/dir").error().code == errc::io_error);
}

TEST_CASE("token ids out of range and deep nesting are corrupt files, not crashes", "[core][tokenizer]") {
  auto error_of = [](const std::string& text) {
    auto tok = hf_tokenizer::try_from_json({text, "", ""});
    REQUIRE_FALSE(tok);
    return tok.error();
  };
  json j = byte_level_json();
  j["model"]["vocab"]["zz"] = 2.5e58;  // a float id: converting it to int is undefined
  CHECK(error_of(j.dump()).code == errc::corrupt_file);
  CHECK_THAT(error_of(j.dump()).message, Catch::Contains("'zz'") && Catch::Contains("not an integer"));
  j = byte_level_json();
  j["model"]["vocab"]["zz"] = 555555273;  // would size the id tables at half a billion entries
  CHECK_THAT(error_of(j.dump()).message, Catch::Contains("555555273"));
  j = byte_level_json();
  j["added_tokens"][0]["id"] = -1;  // indexed the added-token table at -1
  CHECK_THAT(error_of(j.dump()).message, Catch::Contains("added token") && Catch::Contains("-1"));
  j = byte_level_json();
  j["added_tokens"][0]["id"] = "300";
  CHECK(error_of(j.dump()).code == errc::corrupt_file);
  // Gaps in the ids are allowed (the fixture's added tokens start at 300).
  CHECK(load(byte_level_json())->vocab_size() == 303);
  // Copying a 100000-deep value overflowed the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  j = byte_level_json();
  std::string text = j.dump();
  text.insert(text.size() - 1, ",\"extra\":" + deep);
  CHECK_THAT(error_of(text).message, Catch::Contains("nests deeper than 64"));
  auto config = hf_tokenizer::try_from_json({byte_level_json().dump(), "{\"chat_template\":" + deep + "}", ""});
  REQUIRE_FALSE(config);
  CHECK(config.error().code == errc::corrupt_file);
}

TEST_CASE("NFC composes, reorders marks and handles Hangul", "[core][tokenizer]") {
  using inflight::nfc_normalize;
  CHECK(nfc_normalize("e\xCC\x81") == "\xC3\xA9");                      // e + U+0301 -> é
  CHECK(nfc_normalize("\xE2\x84\xAB") == "\xC3\x85");                    // Angstrom sign -> Å
  CHECK(nfc_normalize("a\xCC\x81\xCC\xA3") == "\xE1\xBA\xA1\xCC\x81");   // a + acute + dot below -> ạ + acute
  CHECK(nfc_normalize("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8") == "\xEA\xB0\x81");  // jamo -> 각
  CHECK(nfc_normalize("o\xCC\x88\xCC\x81") == "\xC3\xB6\xCC\x81");
  CHECK(nfc_normalize("\xEF\xAC\x81") == "\xEF\xAC\x81");  // compatibility ligature is left alone
  CHECK(nfc_normalize("plain ascii") == "plain ascii");
}

TEST_CASE("randomized: byte-level and sentencepiece encodings round-trip", "[core][tokenizer]") {
  auto byte_tok = load(byte_level_json());
  auto sp_tok = sentencepiece();
  std::mt19937 rng(7);
  const std::u32string alphabet = U"abcd h i\t\n\u00e9\u4e2d\U0001F600\u0301";
  for (int trial = 0; trial < 300; ++trial) {
    std::u32string cps;
    const int length = static_cast<int>(rng() % 20);
    for (int i = 0; i < length; ++i) cps.push_back(alphabet[rng() % alphabet.size()]);
    const std::string text = inflight::to_utf8(cps);
    const auto a = byte_tok->encode(text, false);
    CHECK(byte_tok->decode(a) == text);
    CHECK(byte_tok->encode(text, false) == a);  // second run comes from the cache
    const auto b = sp_tok->encode(text, false);
    CHECK(sp_tok->decode(b) == text);
    for (token_id id : b) CHECK((id >= 0 && id < sp_tok->vocab_size()));
  }
}
