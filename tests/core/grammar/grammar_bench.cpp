// Figures of constrained decoding: compile time, token-index build time and the time of
// one next-token mask for a JSON Schema over a synthetic vocabulary, beside the same
// mask computed without the token index (every token walked through the parser, sharing
// prefixes). Not a test: it asserts nothing and prints what it measures.
//
//   inflight_grammar_bench [--vocab 32000] [--steps 200] [--seed 1]
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/grammar/earley.hpp"
#include "core/grammar/front_ends.hpp"
#include "core/grammar/matcher.hpp"

using namespace inflight;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

const char* const schema_text = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": 0},
    "name": {"type": "string"},
    "email": {"type": "string", "format": "email"},
    "created": {"type": "string", "format": "date-time"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city"], "additionalProperties": false},
    "status": {"enum": ["active", "inactive", "banned"]},
    "notes": {"anyOf": [{"type": "string"}, {"type": "null"}]}
  },
  "required": ["id", "name", "status"],
  "additionalProperties": false
})";

// Byte tokens, then words (with and without a leading space, capitalized), numbers,
// JSON punctuation runs and UTF-8 characters, like a BPE vocabulary's mix.
std::vector<std::string> synthetic_tokens(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::string> seen;
  std::vector<std::string> tokens;
  auto add = [&](std::string t) {
    if (!t.empty() && seen.insert(t).second) tokens.push_back(std::move(t));
  };
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  const char* punct[] = {"{\"", "\":", "\": ", "\",", "\", \"", "\"}", "},", "}]", "[{", "[\"", "\"]", ", ", ",\"",
                         "\":\"", "\": \"", "\"\n", "\\n", "\\\"", "\\u", "://", ".com", "@", "--", "  ", "\n\n"};
  for (const char* p : punct) add(p);
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  const char* utf8[] = {"é", "è", "ü", "ö", "ñ", "日", "本", "語", "中", "文", "я", "д", "😀", "→", "—", "€"};
  while (tokens.size() < n) {
    const auto kind = rng() % 10;
    std::string t;
    if (kind < 6) {
      const std::size_t len = 2 + rng() % 9;
      for (std::size_t i = 0; i < len; ++i) {
        // Skewed towards frequent letters.
        const std::size_t r = rng() % letters.size();
        t += letters[std::min(r, static_cast<std::size_t>(rng() % letters.size()))];
      }
      if (rng() % 2) t = " " + t;
      if (rng() % 6 == 0) t[t[0] == ' ' ? 1 : 0] = static_cast<char>(std::toupper(t[t[0] == ' ' ? 1 : 0]));
    } else if (kind < 7) {
      const std::size_t len = 1 + rng() % 4;
      for (std::size_t i = 0; i < len; ++i) t += static_cast<char>('0' + rng() % 10);
    } else if (kind < 8) {
      const std::size_t len = 2 + rng() % 3;
      for (std::size_t i = 0; i < len; ++i) t += "{}[]\",: .-_/"[rng() % 12];
    } else {
      const std::size_t len = 1 + rng() % 3;
      for (std::size_t i = 0; i < len; ++i) t += utf8[rng() % 16];
    }
    add(std::move(t));
  }
  return tokens;
}

// The mask without the token index: every token through the parser, sorted, sharing
// prefixes with the one before and skipping the subtrees of dead prefixes.
std::size_t mask_without_index(earley_parser& p, const grammar_vocab& v, std::vector<std::uint64_t>& mask) {
  std::fill(mask.begin(), mask.end(), 0);
  const auto& sorted = v.sorted();
  const auto& lcp = v.lcp();
  std::size_t depth = 0;
  std::size_t num_allowed = 0;
  for (std::size_t i = 0; i < sorted.size();) {
    const std::string& t = v.bytes(sorted[i]);
    const std::size_t keep = i == 0 ? 0 : std::min<std::size_t>(lcp[i], depth);
    p.pop_sets(depth - keep);
    depth = keep;
    bool is_dead = false;
    while (depth < t.size()) {
      if (!p.try_advance(static_cast<std::uint8_t>(t[depth]))) {
        is_dead = true;
        break;
      }
      ++depth;
    }
    if (!is_dead) {
      mask[static_cast<std::size_t>(sorted[i]) >> 6] |= std::uint64_t{1} << (sorted[i] & 63);
      ++num_allowed;
      ++i;
      continue;
    }
    do ++i;
    while (i < sorted.size() && lcp[i] > depth);
  }
  p.pop_sets(depth);
  return num_allowed;
}

void run(std::size_t vocab_size, int num_steps, std::uint64_t seed) {
  auto tokens = synthetic_tokens(vocab_size, seed);
  tokens.push_back("");  // EOS
  const token_id eos = static_cast<token_id>(tokens.size() - 1);
  auto vocab = std::make_shared<const grammar_vocab>(std::move(tokens), std::vector<token_id>{eos});

  auto t0 = clock_type::now();
  auto g = grammar_from_json_schema(schema_text);
  const double compile_ms = ms_since(t0);
  if (!g) {
    std::printf("compile failed: %s\n", g.error().message.c_str());
    return;
  }
  auto shared = std::make_shared<const grammar>(std::move(*g));
  std::size_t num_positions = 0;
  for (const auto& el : shared->elements()) num_positions += el.kind == element_kind::bytes;

  auto index = std::make_shared<const token_index>(shared, vocab);
  t0 = clock_type::now();
  index->warm_up();
  const double warm_ms = ms_since(t0);

  std::mt19937_64 rng(seed);
  grammar_matcher m(index);
  earley_parser baseline(*shared);
  baseline.start_at_root();
  std::vector<std::uint64_t> mask(vocab->num_mask_words());
  std::vector<std::uint64_t> reference(vocab->num_mask_words());
  std::vector<double> with_index, without_index;
  std::size_t num_disagree = 0;
  std::string text;
  for (int step = 0; step < num_steps; ++step) {
    auto t1 = clock_type::now();
    m.fill_next_token_mask(mask);
    with_index.push_back(ms_since(t1));
    t1 = clock_type::now();
    mask_without_index(baseline, *vocab, reference);
    without_index.push_back(ms_since(t1));
    for (std::size_t w = 0; w < mask.size(); ++w) {
      const std::uint64_t eos_bit = w == static_cast<std::size_t>(eos) >> 6 ? std::uint64_t{1} << (eos & 63) : 0;
      num_disagree += (mask[w] & ~eos_bit) != reference[w];
    }
    std::vector<token_id> allowed;
    for (token_id id = 0; id < vocab->size(); ++id)
      if (mask_has(mask, id) && id != eos) allowed.push_back(id);
    if (allowed.empty() || (m.can_finish() && rng() % 2 == 0)) {
      m.reset();
      baseline.start_at_root();
      text.clear();
      continue;
    }
    // Prefer short tokens a little, so that walks reach every part of the schema.
    token_id pick = allowed[rng() % allowed.size()];
    if (step > 40 && rng() % 2 == 0) {
      for (int tries = 0; tries < 8 && vocab->bytes(pick).size() > 1; ++tries) pick = allowed[rng() % allowed.size()];
    }
    m.try_accept_token(pick);
    const std::string& b = vocab->bytes(pick);
    baseline.try_advance_all({reinterpret_cast<const std::uint8_t*>(b.data()), b.size()});
    text += b;
  }
  auto stats = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    return std::array<double, 3>{sum / static_cast<double>(v.size()), v[v.size() / 2], v[v.size() * 99 / 100]};
  };
  const auto a = stats(with_index);
  const auto b = stats(without_index);
  std::printf("vocab %zu tokens, schema of %zu grammar elements (%zu byte positions), %zu rules\n", vocab->sorted().size(),
              shared->elements().size(), num_positions, shared->rules().size());
  std::printf("  compile %.2f ms; token index warm-up %.1f ms (%.2f ms per position)\n", compile_ms, warm_ms,
              warm_ms / static_cast<double>(std::max<std::size_t>(num_positions, 1)));
  std::printf("  mask with token index:    mean %.3f ms, median %.3f ms, p99 %.3f ms over %d steps\n", a[0], a[1], a[2],
              num_steps);
  std::printf("  mask without token index: mean %.3f ms, median %.3f ms, p99 %.3f ms\n", b[0], b[1], b[2]);
  std::printf("  masks that differ: %zu words (must be 0)\n", num_disagree);

  // Fixed states, each mask computed 50 times: where the walk spends little time but a
  // real model spends most (inside strings).
  const char* prefixes[] = {"{", "{\"id\": 12, \"name\": \"Ada Lov", "{\"id\": 1, \"name\": \"x\", \"tags\": [\"a\", ",
                            "{\"id\": 1, \"name\": \"x\", \"score\": 3.5"};
  for (const char* prefix : prefixes) {
    grammar_matcher fixed(index);
    earley_parser plain(*shared);
    plain.start_at_root();
    const std::string_view text = prefix;
    if (!fixed.try_accept_bytes(text) ||
        !plain.try_advance_all({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()})) {
      std::printf("  prefix %s: not a prefix of the schema\n", prefix);
      continue;
    }
    std::vector<double> fast, slow;
    std::size_t num_allowed = 0;
    for (int rep = 0; rep < 50; ++rep) {
      auto t1 = clock_type::now();
      fixed.fill_next_token_mask(mask);
      fast.push_back(ms_since(t1));
      t1 = clock_type::now();
      num_allowed = mask_without_index(plain, *vocab, reference);
      slow.push_back(ms_since(t1));
    }
    const auto f = stats(fast);
    const auto w = stats(slow);
    std::printf("  after %-44s %6zu allowed: with index median %.3f ms, without %.3f ms\n", prefix, num_allowed, f[1],
                w[1]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t vocab = 32000;
  int steps = 200;
  std::uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--vocab")) vocab = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(argv[i + 1]);
  }
  run(vocab, steps, seed);
  return 0;
}
