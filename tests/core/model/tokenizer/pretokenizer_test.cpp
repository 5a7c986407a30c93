#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/model/tokenizer/hf_regex.hpp"
#include "core/model/tokenizer/pretokenizer.hpp"

using json = nlohmann::json;
using pieces = std::vector<std::string>;

namespace {

pieces split(const char* behavior, const std::string& text, bool invert = false) {
  auto pre = inflight::pre_tokenizer::try_from_json(
      {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}});
  REQUIRE(pre);
  return pre->apply(text, 0);
}

}  // namespace

TEST_CASE("Split behaviors", "[core][tokenizer]") {
  const std::string text = "the-final--countdown";
  CHECK(split("Removed", text) == pieces{"the", "final", "countdown"});
  CHECK(split("Isolated", text) == pieces{"the", "-", "final", "-", "-", "countdown"});
  CHECK(split("MergedWithPrevious", text) == pieces{"the-", "final-", "-", "countdown"});
  CHECK(split("MergedWithNext", text) == pieces{"the", "-final", "-", "-countdown"});
  CHECK(split("Contiguous", text) == pieces{"the", "-", "final", "--", "countdown"});
  CHECK(split("Removed", text, true) == pieces{"-", "-", "-"});
}

TEST_CASE("Llama-3 style regex split with byte-level mapping", "[core][tokenizer]") {
  const json config = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
         {"behavior", "Isolated"}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  auto pre = inflight::pre_tokenizer::try_from_json(config);
  REQUIRE(pre);
  CHECK(pre->is_byte_level());
  // Spaces become "Ġ", newlines "Ċ"; digits group by three.
  CHECK(pre->apply("I'LL pay 12345!\n\nok", 0) ==
        pieces{"I", "'LL", "\xC4\xA0pay", "\xC4\xA0", "123", "45", "!\xC4\x8A\xC4\x8A", "ok"});
}

TEST_CASE("regex rewrite: ECMAScript white space and ASCII-only contraction case", "[core][tokenizer]") {
  auto spaces = inflight::hf_regex::try_compile("\\s+");
  REQUIRE(spaces);
  using ranges = std::vector<std::pair<std::size_t, std::size_t>>;
  CHECK(spaces->find_all("a\xEF\xBB\xBF" "b") == ranges{{1, 4}});  // U+FEFF counts as space
  CHECK(spaces->find_all("a\xC2\x85" "b").empty());                // U+0085 does not
  auto contractions = inflight::hf_regex::try_compile("(?i:'s|'t|'re|'ve|'m|'ll|'d)");
  REQUIRE(contractions);
  CHECK(contractions->find_all("'S'Re") == ranges{{0, 2}, {2, 5}});
  CHECK(contractions->find_all("'\xC5\xBF").empty());  // long s is not folded to s
  CHECK(inflight::rewrite_hf_pattern("[^\\s\\p{L}]") ==
        "[^\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}\\p{L}]");
}

TEST_CASE("normalizers: Prepend, Replace, Strip, NFC", "[core][tokenizer]") {
  auto n = inflight::text_normalizer::try_from_json(
      {{"type", "Sequence"},
       {"normalizers",
        {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}},
         {{"type", "NFC"}},
         {{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "#"}},
         {{"type", "Prepend"}, {"prepend", ">"}}}}});
  REQUIRE(n);
  CHECK(n->apply("  e\xCC\x81 12 x3 ") == ">\xC3\xA9 # x# ");
  CHECK(n->apply("").empty());  // Prepend leaves empty text empty
}

TEST_CASE("Metaspace pre-tokenizer prepends and splits on the replacement", "[core][tokenizer]") {
  auto pre = inflight::pre_tokenizer::try_from_json(
      {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", true}});
  REQUIRE(pre);
  const std::string m = "\xE2\x96\x81";
  CHECK(pre->apply("hello  world", 0) == pieces{m + "hello", m, m + "world"});
  CHECK(pre->apply("hello", 1) == pieces{"hello"});
}
