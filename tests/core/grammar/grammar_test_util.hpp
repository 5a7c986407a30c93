#pragma once
// Helpers of the core/grammar tests: whole-string acceptance, a synthetic vocabulary with
// tokens that straddle grammar boundaries, the brute-force mask, random generation.

#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/grammar/earley.hpp"
#include "core/grammar/front_ends.hpp"
#include "core/grammar/matcher.hpp"

namespace inflight::grammar_test {

inline std::shared_ptr<const grammar> must(result<grammar> g) {
  if (!g) FAIL("compile failed: " << g.error().message);
  return std::make_shared<const grammar>(std::move(*g));
}

/// `text` is a complete sentence of `g`.
inline bool accepts(const grammar& g, std::string_view text) {
  earley_parser p(g);
  p.start_at_root();
  for (char c : text)
    if (!p.try_advance(static_cast<std::uint8_t>(c))) return false;
  return p.can_finish();
}

/// `text` can be continued into a sentence of `g`.
inline bool is_prefix(const grammar& g, std::string_view text) {
  earley_parser p(g);
  p.start_at_root();
  for (char c : text)
    if (!p.try_advance(static_cast<std::uint8_t>(c))) return false;
  return true;
}

/// Every single byte (so any text can be spelled), JSON-ish multi-byte tokens that cross
/// grammar boundaries ({" ": ," "} ...), words, numbers, UTF-8 characters and lone UTF-8
/// bytes, two special tokens with no text, and EOS as the last id.
inline std::shared_ptr<const grammar_vocab> synthetic_vocab(std::size_t num_random, std::uint64_t seed) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t :
       {"{\"", "\":", "\": ", "\":\"", " \"a", "\",", "\", \"", "\"}", "\"]", "}]", "]}", "},", "}, {", "[{", "[[", "[]",
        "{}", "\\\"", "\\\\", "\\n", "\\u00", "\\ud83d", "true", "false", "null", "true}", "null]", "1.5e", "e+10", "-0",
        "00", "12", "123", ".5", "0.", "1,", ", ", ",\"", "\"\"", "\"a\"", "name", "\"name\"", "\"name\":", "age",
        "\"age\": ", "id", "tags", "abc", "hello world", " the", "é", "ü\"", "日本", "\xC3", "\xA9\"", "😀", "2024-",
        "-01-", "T12:", ":00Z", "a@b", ".com", "255.", "0.0.", "x", "xyz", "{\"id\":", "\"kind\":\"", "\"a\":1}", "\n",
        "  ", "\t", "ab\"", "\"b"})
    tokens.push_back(t);
  // Random short strings over a JSON-ish alphabet.
  const std::string alphabet = "{}[]\",: abcdexyz0123456789.-+eE\\nut";
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < num_random; ++i) {
    const std::size_t len = 2 + rng() % 5;
    std::string t;
    for (std::size_t k = 0; k < len; ++k) t += alphabet[rng() % alphabet.size()];
    tokens.push_back(t);
  }
  tokens.push_back("");  // special tokens: never text
  tokens.push_back("");
  tokens.push_back("");  // EOS
  const token_id eos = static_cast<token_id>(tokens.size() - 1);
  return std::make_shared<const grammar_vocab>(std::move(tokens), std::vector<token_id>{eos});
}

/// The allowed-next mask by feeding every token to a copy of the matcher (taking each
/// accepted one back again), without the token index.
inline std::vector<std::uint64_t> brute_force_mask(const grammar_matcher& m) {
  const auto& v = m.index().vocab();
  std::vector<std::uint64_t> mask(v.num_mask_words(), 0);
  grammar_matcher copy = m;
  for (token_id id = 0; id < v.size(); ++id) {
    if (!copy.try_accept_token(id)) continue;
    mask[static_cast<std::size_t>(id) >> 6] |= std::uint64_t{1} << (id & 63);
    if (!copy.try_rollback(1)) FAIL("rollback of one token failed");
  }
  return mask;
}

inline std::vector<token_id> allowed_ids(std::span<const std::uint64_t> mask, int vocab_size) {
  std::vector<token_id> ids;
  for (token_id id = 0; id < vocab_size; ++id)
    if (mask_has(mask, id)) ids.push_back(id);
  return ids;
}

struct generation {
  std::string text;
  bool is_finished = false;  ///< EOS was taken
  std::size_t num_mask_checks = 0;
};

/// Picks random allowed tokens until the grammar can finish (then EOS, with probability
/// `p_stop`), checking each mask against the brute force when `check_masks`. After
/// `soft_limit` steps it takes single bytes, often those that close things.
inline generation generate(grammar_matcher& m, std::mt19937_64& rng, bool check_masks, double p_stop = 0.5,
                           std::size_t soft_limit = 60, std::size_t hard_limit = 2000) {
  const auto& v = m.index().vocab();
  generation out;
  for (std::size_t step = 0; step < hard_limit; ++step) {
    const auto mask = m.next_token_mask();
    if (check_masks) {
      const auto reference = brute_force_mask(m);
      if (mask != reference) {
        const auto got = allowed_ids(mask, v.size());
        const auto want = allowed_ids(reference, v.size());
        std::string diff;
        for (token_id id = 0; id < v.size(); ++id)
          if (mask_has(mask, id) != mask_has(reference, id))
            diff += (mask_has(mask, id) ? " +[" : " -[") + v.bytes(id) + "]";
        FAIL("mask differs from brute force after \"" << out.text << "\":" << diff);
      }
      ++out.num_mask_checks;
    }
    const auto ids = allowed_ids(mask, v.size());
    REQUIRE_FALSE(ids.empty());  // a live matcher always has a way on
    const token_id eos = v.eos_ids()[0];
    if (m.can_finish() && std::uniform_real_distribution<double>(0, 1)(rng) < p_stop) {
      REQUIRE(mask_has(mask, eos));
      REQUIRE(m.try_accept_token(eos));
      out.is_finished = true;
      return out;
    }
    std::vector<token_id> choices;
    for (auto id : ids)
      if (id != eos) choices.push_back(id);
    if (choices.empty()) {
      REQUIRE(m.try_accept_token(eos));
      out.is_finished = true;
      return out;
    }
    if (step >= soft_limit) {
      // Single bytes only, half of the time a closing quote or bracket where one is allowed
      // (not always: inside an e-mail address '}' is a plain character).
      std::vector<token_id> single, closing;
      for (auto id : choices) {
        const std::string& t = v.bytes(id);
        if (t.size() != 1) continue;
        single.push_back(id);
        if (std::string_view("\"}]").find(t[0]) != std::string_view::npos) closing.push_back(id);
      }
      if (!closing.empty() && rng() % 2 == 0)
        choices = std::move(closing);
      else if (!single.empty())
        choices = std::move(single);
    }
    const token_id pick = choices[rng() % choices.size()];
    REQUIRE(m.try_accept_token(pick));
    out.text += v.bytes(pick);
  }
  return out;
}

}  // namespace inflight::grammar_test
