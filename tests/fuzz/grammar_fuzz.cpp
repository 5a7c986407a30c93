// libFuzzer harness: constraints as requests send them (GBNF, regular expressions,
// choice lists, JSON Schemas, framed JSON for tool calls) are untrusted input. Each
// compiles or fails with a clear error; a compiled one is walked over a small fixed
// vocabulary, the input's tail choosing the tokens, and at every step the mask must say
// exactly which tokens the matcher takes (each checked by taking it and rolling back).
//
// Input: byte 0 picks the front-end, the text up to the first NUL byte is the spec, the
// bytes after it choose the walk.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/matcher.hpp"
#include "core/grammar/token_index.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

constexpr grammar_kind kinds[] = {grammar_kind::gbnf, grammar_kind::regex, grammar_kind::choice,
                                  grammar_kind::json_schema, grammar_kind::framed_json};
constexpr std::size_t max_walk_steps = 48;

/// Every single byte, a few multi-byte pieces of JSON and words, one special token that
/// never matches ("") and EOS last.
const std::shared_ptr<const grammar_vocab>& vocab() {
  static const auto v = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    for (const char* piece : {"{\"", "\":", "\",", "\"}", "\"]", "[\"", "true", "false", "null", "name", "  ",
                              "\n\n", "12", "-0.5e", "<tool_call>", "</tool_call>", "\u00e9", "\xe4\xb8\xad", "\xf0\x9f",
                              "abc", "yes", "no", "\\u00", "\\\""}) {
      bytes.emplace_back(piece);
    }
    bytes.emplace_back("");  // a special token
    bytes.emplace_back("");  // EOS
    const auto eos = static_cast<token_id>(bytes.size() - 1);
    return std::make_shared<const grammar_vocab>(std::move(bytes), std::vector<token_id>{eos});
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto input = fuzz::as_text(data + 1, size - 1);
  const auto nul = input.find('\0');
  const grammar_spec spec{kinds[data[0] % std::size(kinds)], std::string(input.substr(0, nul))};
  const auto walk = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);

  auto compiled = try_compile(spec);
  if (!compiled) {
    fuzz::note(compiled.error().message);
    FUZZ_CHECK(compiled.error().code == errc::invalid_argument || compiled.error().code == errc::unsupported);
    FUZZ_CHECK(!compiled.error().message.empty());
    return 0;
  }
  auto index = std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*compiled)), vocab());
  grammar_matcher m(index);
  const auto& v = *vocab();
  std::vector<token_id> allowed;
  for (std::size_t step = 0; step < max_walk_steps && !m.is_ended(); ++step) {
    const auto mask = m.next_token_mask();
    FUZZ_CHECK(mask.size() == v.num_mask_words());
    allowed.clear();
    for (token_id id = 0; id < v.size(); ++id) {
      const bool is_allowed = mask_has(mask, id);
      const bool is_taken = m.try_accept_token(id);
      FUZZ_CHECK(is_allowed == is_taken);
      if (is_taken) {
        allowed.push_back(id);
        FUZZ_CHECK(m.try_rollback(1));
      }
    }
    FUZZ_CHECK(v.bytes(v.size() - 2).empty() && !mask_has(mask, v.size() - 2));
    FUZZ_CHECK(mask_has(mask, v.size() - 1) == m.can_finish());
    if (allowed.empty()) {
      // Every byte is a token, so only a grammar that matches nothing has no way on,
      // and it has none from the start.
      FUZZ_CHECK(step == 0);
      break;
    }
    const auto pick = step < walk.size() ? static_cast<std::uint8_t>(walk[step]) : 0;
    const auto steps_before = m.num_steps();
    FUZZ_CHECK(m.try_accept_token(allowed[pick % allowed.size()]));
    FUZZ_CHECK(m.num_steps() == steps_before + 1);
  }
  // Rolling everything back gives the start state's mask again.
  const auto taken = m.num_steps();
  FUZZ_CHECK(m.try_rollback(taken));
  grammar_matcher fresh(index);
  FUZZ_CHECK(m.next_token_mask() == fresh.next_token_mask());
  FUZZ_CHECK(!m.try_rollback(1));
  return 0;
}
