#include "core/engine/sampling/logit_processors.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <vector>

namespace inflight {
namespace {

void penalise(float& logit, const sampling_params& params, int num_in_output) {
  const float rep = params.repetition_penalty;
  if (rep != 1.0f) logit = logit > 0.0f ? logit / rep : logit * rep;
  if (num_in_output > 0)
    logit -= params.presence_penalty + params.frequency_penalty * static_cast<float>(num_in_output);
}

}  // namespace

void apply_penalties(std::span<float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens) {
  if (!params.has_penalties() || logits.empty()) return;
  // Per-token history marks, all zero between calls; grows to the vocab once per thread.
  thread_local std::vector<int> counts;
  if (counts.size() < logits.size()) counts.resize(logits.size(), 0);
  const auto vocab = static_cast<token_id>(logits.size());
  const auto first_output = static_cast<std::size_t>(
      std::clamp(num_prompt_tokens, 0, static_cast<int>(history.size())));
  // counts[t] = seen flag | occurrences in the output; each token is penalised once.
  constexpr int seen = 1 << 30;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const token_id t = history[i];
    if (t < 0 || t >= vocab) continue;
    counts[t] |= seen;
    if (i >= first_output) counts[t] += 1;
  }
  for (token_id t : history) {
    if (t < 0 || t >= vocab || counts[t] == 0) continue;
    penalise(logits[t], params, counts[t] & (seen - 1));
    counts[t] = 0;
  }
}

void apply_logit_bias(std::span<float> logits, std::span<const logit_bias_entry> bias) {
  const auto vocab = static_cast<token_id>(logits.size());
  for (const auto& e : bias)
    if (e.token >= 0 && e.token < vocab) logits[static_cast<std::size_t>(e.token)] += e.bias;
}

void apply_token_mask(std::span<float> logits, std::span<const std::uint64_t> allowed) {
  if (allowed.empty()) return;
  constexpr float masked = -std::numeric_limits<float>::infinity();
  const std::size_t n = logits.size();
  const std::size_t num_covered = std::min(n, allowed.size() * 64);
  for (std::size_t w = 0; w * 64 < num_covered; ++w) {
    // Only the clear bits: a grammar usually allows either almost all or very few tokens.
    const std::size_t base = w * 64;
    const std::uint64_t valid = num_covered - base >= 64 ? ~std::uint64_t{0}
                                                         : (std::uint64_t{1} << (num_covered - base)) - 1;
    for (std::uint64_t clear = ~allowed[w] & valid; clear != 0; clear &= clear - 1)
      logits[base + static_cast<std::size_t>(std::countr_zero(clear))] = masked;
  }
  std::fill(logits.begin() + static_cast<std::ptrdiff_t>(num_covered), logits.end(), masked);
}

token_id greedy_allowed_token(std::span<const float> logits, std::span<const std::uint64_t> allowed) {
  const std::size_t n = std::min(logits.size(), allowed.size() * 64);
  float best = -std::numeric_limits<float>::infinity();
  std::size_t best_id = 0;
  for (std::size_t base = 0; base < n; base += 64) {
    const std::uint64_t valid = n - base >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << (n - base)) - 1;
    std::uint64_t bits = allowed[base / 64] & valid;
    if (bits == ~std::uint64_t{0}) {  // a word of all-allowed tokens: a plain scan
      for (std::size_t i = base; i < base + 64; ++i)
        if (logits[i] > best) best = logits[i], best_id = i;
      continue;
    }
    for (; bits != 0; bits &= bits - 1) {
      const std::size_t i = base + static_cast<std::size_t>(std::countr_zero(bits));
      if (logits[i] > best) best = logits[i], best_id = i;
    }
  }
  return static_cast<token_id>(best_id);
}

void apply_logit_processors(std::span<float> logits, const sampling_params& params,
                            std::span<const token_id> history, int num_prompt_tokens,
                            std::span<const std::uint64_t> allowed) {
  apply_penalties(logits, params, history, num_prompt_tokens);
  apply_logit_bias(logits, params.logit_bias);
  apply_token_mask(logits, allowed);
}

}  // namespace inflight
