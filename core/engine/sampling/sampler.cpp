#include "core/engine/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/sampling/rng.hpp"
#include "core/engine/sampling/row_math.hpp"

namespace inflight {
namespace {

/// Buffers reused across calls on one thread; each grows to the vocab once.
struct scratch {
  std::vector<float> work;   ///< the row after the logit processors
  std::vector<float> probs;  ///< unnormalised probabilities, 0 = dropped
  std::vector<token_id> ids;
  std::vector<std::uint16_t> bins;
  std::vector<double> bin_mass;
  std::vector<float> block_maxima;
};

scratch& local_scratch() {
  thread_local scratch s;
  return s;
}

/// The order every cut uses: larger value first, then lower id.
bool ranks_before(float va, token_id a, float vb, token_id b) {
  return va > vb || (va == vb && a < b);
}

/// The k best ids of `values` in ranks_before order, best first.
void select_top(std::span<const float> values, std::size_t k, scratch& s) {
  const auto before = [&](token_id a, token_id b) { return ranks_before(values[a], a, values[b], b); };
  std::vector<token_id>& out = s.ids;
  out.clear();
  k = std::min(k, values.size());
  if (k == 0) return;
  if (k * 8 > values.size()) {
    out.resize(values.size());
    std::iota(out.begin(), out.end(), token_id{0});
    std::nth_element(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k - 1), out.end(), before);
    out.resize(k);
    std::sort(out.begin(), out.end(), before);
    return;
  }
  // Heap of the k best so far, worst on top; ids arrive in increasing order, so an equal
  // value never displaces a kept one. Blocks whose max cannot enter are skipped whole.
  constexpr std::size_t block = 64;
  s.block_maxima.resize((values.size() + block - 1) / block);
  row_math::block_max(values, block, s.block_maxima);
  for (std::size_t i = 0; i < k; ++i) out.push_back(static_cast<token_id>(i));
  std::make_heap(out.begin(), out.end(), before);
  float worst = values[out.front()];
  for (std::size_t b = 0; b < s.block_maxima.size(); ++b) {
    if (!(s.block_maxima[b] > worst)) continue;
    const std::size_t end = std::min(values.size(), (b + 1) * block);
    for (std::size_t i = std::max(k, b * block); i < end; ++i) {
      if (!(values[i] > worst)) continue;
      std::pop_heap(out.begin(), out.end(), before);
      out.back() = static_cast<token_id>(i);
      std::push_heap(out.begin(), out.end(), before);
      worst = values[out.front()];
    }
  }
  std::sort_heap(out.begin(), out.end(), before);
}

/// Lowest id holding `value`: with the row's max, the greedy token.
token_id first_index_of(std::span<const float> row, float value) {
  const auto it = std::find(row.begin(), row.end(), value);
  return it == row.end() ? 0 : static_cast<token_id>(it - row.begin());
}

/// The top-k path: candidates are the k best tokens, sorted, so top-p and min-p both
/// drop a suffix. Returns the drawn token.
token_id draw_from_top_k(std::span<const float> row, const sampling_params& params, double unit,
                         scratch& s) {
  select_top(row, static_cast<std::size_t>(params.top_k), s);
  const std::size_t k = s.ids.size();
  const float inv_t = 1.0f / params.temperature;
  const float top = row[s.ids[0]];
  for (std::size_t j = 0; j < k; ++j) s.probs[j] = row_math::fast_exp((row[s.ids[j]] - top) * inv_t);
  std::size_t n = k;
  if (params.top_p < 1.0f) {
    const double target = params.top_p * row_math::sum_of({s.probs.data(), k});
    double cum = 0.0;
    for (n = 0; n < k;) {
      cum += s.probs[n++];
      if (cum >= target) break;
    }
  }
  // probs[0] is e^0 = 1, the max probability, so min-p compares with min_p itself.
  while (n > 1 && s.probs[n - 1] < params.min_p) --n;
  const std::span<const float> kept{s.probs.data(), n};
  return s.ids[row_math::find_cumulative(kept, unit * row_math::sum_of(kept))];
}

/// The ids whose bin is `bin`, in increasing order. A branch-free test per chunk skips the
/// chunks without one, which are most of them.
void gather_bin(std::span<const std::uint16_t> bins, std::uint16_t bin, std::vector<token_id>& out) {
  constexpr std::size_t chunk = 64;
  out.clear();
  for (std::size_t start = 0; start < bins.size(); start += chunk) {
    const std::size_t end = std::min(bins.size(), start + chunk);
    unsigned has_bin = 0;
    for (std::size_t i = start; i < end; ++i) has_bin |= bins[i] == bin ? 1u : 0u;
    if (has_bin == 0) continue;
    for (std::size_t i = start; i < end; ++i)
      if (bins[i] == bin) out.push_back(static_cast<token_id>(i));
  }
}

/// The nucleus: the smallest set, in ranks_before order, whose mass reaches `target`. A
/// histogram over probability bins finds the bin where the running mass crosses
/// `target`; only that bin is sorted, so the vocab is never sorted. Returns the
/// probability of the last token in; the nucleus is every p above it plus those equal to
/// it but not left in s.ids, which ends holding the cut bin's tokens ranked after the cut.
std::optional<float> find_nucleus(std::span<const float> probs, double target, scratch& s) {
  s.bins.resize(probs.size());
  row_math::prob_bins(probs, s.bins);
  // Two interleaved tables halve the chains of adds into one popular bin.
  s.bin_mass.assign(2 * row_math::num_prob_bins, 0.0);
  for (std::size_t i = 0; i < probs.size(); ++i)
    s.bin_mass[(i & 1) * row_math::num_prob_bins + s.bins[i]] += probs[i];
  double cum = 0.0;
  std::size_t cut_bin = 0;
  for (; cut_bin < row_math::num_prob_bins; ++cut_bin) {
    const double mass = s.bin_mass[cut_bin] + s.bin_mass[row_math::num_prob_bins + cut_bin];
    if (cum + mass >= target) break;
    cum += mass;
  }
  if (cut_bin == row_math::num_prob_bins) return std::nullopt;  // rounding: keep the whole row
  gather_bin(s.bins, static_cast<std::uint16_t>(cut_bin), s.ids);
  if (s.ids.empty()) return std::nullopt;  // unreachable: the crossing bin has mass
  const auto before = [&](token_id a, token_id b) { return ranks_before(probs[a], a, probs[b], b); };
  std::sort(s.ids.begin(), s.ids.end(), before);
  auto last = s.ids.end() - 1;
  for (auto it = s.ids.begin(); it != s.ids.end(); ++it) {
    cum += probs[*it];
    if (cum >= target) {
      last = it;
      break;
    }
  }
  const float cut_prob = probs[*last];
  s.ids.erase(s.ids.begin(), last + 1);
  return cut_prob;
}

/// The full-row path: `probs` holds e^((row - max) / T) for every token and sums to
/// `total`; top-p and min-p zero out entries, then one draw.
token_id draw_from_row(std::span<float> probs, double total, const sampling_params& params,
                       double unit, scratch& s) {
  // The max probability is e^0 = 1, so the min-p threshold is min_p itself.
  float threshold = params.min_p;
  bool has_ties_to_drop = false;
  if (params.top_p < 1.0f) {
    if (const auto cut_prob = find_nucleus(probs, params.top_p * total, s); cut_prob && *cut_prob >= threshold) {
      threshold = *cut_prob;
      has_ties_to_drop = true;
    }
  }
  if (threshold > 0.0f) {
    total = row_math::drop_below(probs, threshold);
    // Tokens equal to the cut but ranked after it (higher ids) are outside the nucleus.
    if (has_ties_to_drop)
      for (token_id id : s.ids) {
        total -= probs[id];
        probs[id] = 0.0f;
      }
  }
  return static_cast<token_id>(row_math::find_cumulative(probs, unit * total));
}

/// Writes the n most likely tokens of the raw row with their log-softmax values.
void fill_top_logprobs(std::span<const float> logits, float log_norm, int n, scratch& s,
                       std::vector<top_logprob>& out) {
  select_top(logits, static_cast<std::size_t>(n), s);
  out.clear();
  out.reserve(s.ids.size());
  for (token_id id : s.ids) out.push_back({id, logits[id] - log_norm});
}

}  // namespace

sampled_token sample(std::span<const float> logits, const sampling_params& params,
                     std::span<const token_id> history, int num_prompt_tokens, std::uint64_t seed,
                     std::uint64_t sample_index, std::span<const std::uint64_t> allowed_tokens) {
  sampled_token out;
  if (logits.empty()) return out;
  scratch& s = local_scratch();
  if (s.probs.size() < logits.size()) s.probs.resize(logits.size());
  // The raw softmax: its denominator gives every logprob (logprob = logit - log_norm), and
  // without processors at T = 1 its probabilities are the sampling ones.
  const float raw_max = row_math::max_of(logits);
  const double raw_total = row_math::exp_shifted(logits, raw_max, 1.0f, {s.probs.data(), logits.size()});
  const float log_norm = raw_max + static_cast<float>(std::log(raw_total));

  std::span<const float> row = logits;
  float row_max = raw_max;
  const bool is_greedy = params.temperature < min_temperature;
  const bool is_mask_only = !allowed_tokens.empty() && !params.has_penalties() && params.logit_bias.empty();
  if (has_logit_processors(params, allowed_tokens) && !(is_greedy && is_mask_only)) {
    s.work.assign(logits.begin(), logits.end());
    apply_logit_processors(s.work, params, history, num_prompt_tokens, allowed_tokens);
    row = s.work;
    row_max = row_math::max_of(row);
  }
  // A mask that allows nothing leaves only -inf: the greedy path returns id 0, which the
  // grammar's owner then refuses (and fails the sequence) rather than drawing from NaNs.
  const bool is_all_masked = row_max == -std::numeric_limits<float>::infinity();
  if (is_greedy && is_mask_only) {
    out.token = greedy_allowed_token(logits, allowed_tokens);  // no masked copy of the row
  } else if (is_greedy || is_all_masked) {
    out.token = first_index_of(row, row_max);
  } else {
    const double unit = counter_rng(seed, sample_index).next_unit();
    if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < row.size()) {
      out.token = draw_from_top_k(row, params, unit, s);
    } else {
      const std::span<float> probs{s.probs.data(), row.size()};
      const bool is_raw = row.data() == logits.data() && params.temperature == 1.0f;
      const double total = is_raw ? raw_total : row_math::exp_shifted(row, row_max, 1.0f / params.temperature, probs);
      out.token = draw_from_row(probs, total, params, unit, s);
    }
  }
  out.logprob = logits[out.token] - log_norm;
  if (params.logprobs > 0) fill_top_logprobs(logits, log_norm, params.logprobs, s, out.top_logprobs);
  return out;
}

sampled_token sample(std::span<const float> logits, const seq_step& step, int row) {
  if (row == 0)
    return sample(logits, step.params, step.history, step.num_prompt_tokens, step.seed, step.sample_index,
                  step.allowed_tokens);
  // Row i follows the draft's first i tokens, as if they had been sampled already.
  std::span<const token_id> history = step.history;
  thread_local std::vector<token_id> extended;
  if (!step.history.empty()) {
    extended.assign(step.history.begin(), step.history.end());
    for (int i = 0; i < row; ++i) extended.push_back(step.draft_token(i));
    history = extended;
  }
  std::span<const std::uint64_t> mask;
  const std::size_t words = step.allowed_tokens.size();
  if (words > 0 && step.draft_allowed_tokens.size() >= words * std::size_t(row))
    mask = std::span(step.draft_allowed_tokens).subspan(words * std::size_t(row - 1), words);
  return sample(logits, step.params, history, step.num_prompt_tokens, step.seed,
                step.sample_index + std::uint64_t(row), mask);
}

bool is_raw_greedy(const seq_step& step) {
  const sampling_params& p = step.params;
  return p.temperature < min_temperature && !has_logit_processors(p, step.allowed_tokens) && p.logprobs == 0;
}

bool is_masked_greedy(const seq_step& step) {
  const sampling_params& p = step.params;
  return p.temperature < min_temperature && !step.allowed_tokens.empty() && !p.has_penalties() &&
         p.logit_bias.empty() && p.logprobs == 0 && step.num_draft == 0;
}

}  // namespace inflight
