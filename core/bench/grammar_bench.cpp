#include "core/bench/grammar_bench.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <chrono>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/matcher.hpp"

namespace inflight::bench {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// A token that moves a JSON text along: punctuation that opens, closes or separates, or a digit.
bool is_structural(const std::string& bytes) {
  for (char c : bytes) {
    if (c == '"' || c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']' || (c >= '0' && c <= '9'))
      return true;
  }
  return false;
}

/// A random allowed token; with probability `bias` one of the structural ones (when any).
token_id pick_token(const std::vector<token_id>& allowed, const grammar_vocab& vocab, double bias,
                    std::mt19937_64& rng) {
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (coin(rng) < bias) {
    std::vector<token_id> structural;
    for (token_id id : allowed)
      if (is_structural(vocab.bytes(id))) structural.push_back(id);
    if (!structural.empty()) return structural[rng() % structural.size()];
  }
  return allowed[rng() % allowed.size()];
}

/// One walk: returns whether it reached a text where the grammar can finish.
bool walk(grammar_matcher& m, const grammar_bench_options& o, std::mt19937_64& rng, schema_timings& out,
          std::string& text) {
  const grammar_vocab& vocab = m.index().vocab();
  std::vector<std::uint64_t> mask(vocab.num_mask_words());
  for (int step = 0; step < o.max_steps; ++step) {
    const auto t0 = clock_type::now();
    m.fill_next_token_mask(mask);
    out.mask_s.push_back(seconds_since(t0));
    if (m.can_finish()) return true;
    const auto allowed = allowed_tokens(mask, vocab);
    out.num_allowed_sum += allowed.size();
    if (allowed.empty()) return false;  // cannot happen: every live state can reach an end
    const token_id pick = pick_token(allowed, vocab, o.structural_bias, rng);
    if (!m.try_accept_token(pick)) return false;
    text += vocab.bytes(pick);
  }
  return false;
}

}  // namespace

std::vector<token_id> allowed_tokens(const std::vector<std::uint64_t>& mask, const grammar_vocab& vocab) {
  std::vector<token_id> out;
  for (std::size_t w = 0; w < mask.size(); ++w) {
    for (std::uint64_t bits = mask[w]; bits != 0; bits &= bits - 1) {
      const auto id = static_cast<token_id>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
      if (id < vocab.size() && !vocab.is_eos(id)) out.push_back(id);
    }
  }
  return out;
}

result<schema_timings> measure_schema(const named_schema& schema, const std::shared_ptr<const grammar_vocab>& vocab,
                                      const grammar_bench_options& o, std::mt19937_64& rng) {
  schema_timings out;
  out.name = schema.name;
  std::shared_ptr<const grammar> compiled;
  for (int i = 0; i < std::max(1, o.num_compiles); ++i) {
    const auto t0 = clock_type::now();
    auto g = try_compile({grammar_kind::json_schema, schema.text});
    out.compile_s.push_back(seconds_since(t0));
    if (!g) return make_error(g.error().code, schema.name + ": " + g.error().message);
    if (!compiled) compiled = std::make_shared<const grammar>(std::move(*g));
  }
  for (const auto& el : compiled->elements()) out.num_positions += el.kind == element_kind::bytes;
  auto index = std::make_shared<const token_index>(compiled, vocab, std::nullopt, o.share_copies, o.leo);
  const auto t0 = clock_type::now();
  index->warm_up();
  out.index_build_s = seconds_since(t0);

  grammar_matcher m(index);
  for (int w = 0; w < o.num_walks; ++w) {
    m.reset();
    std::string text;
    ++out.num_walks;
    if (!walk(m, o, rng, out, text)) continue;
    ++out.num_finished;
    if (!nlohmann::json::parse(text, nullptr, false).is_discarded()) ++out.num_valid_json;
  }
  return out;
}

}  // namespace inflight::bench
