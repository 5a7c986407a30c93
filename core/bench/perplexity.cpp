#include "core/bench/perplexity.hpp"

#include <algorithm>
#include <cmath>

namespace inflight::bench {

perplexity_chunks plan_perplexity_chunks(int num_tokens, int ctx, int max_chunks) {
  perplexity_chunks p;
  if (ctx < 2 || num_tokens < ctx) return p;
  p.ctx = ctx;
  p.num_chunks = num_tokens / ctx;
  if (max_chunks > 0) p.num_chunks = std::min(p.num_chunks, max_chunks);
  p.first = ctx / 2;
  return p;
}

std::vector<double> log_softmax(std::span<const float> logits) {
  std::vector<double> out(logits.size());
  if (logits.empty()) return out;
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(double(x) - max_logit);
  const double log_sum = std::log(sum) + max_logit;
  for (std::size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_sum;
  return out;
}

void perplexity_accumulator::add(std::span<const float> logits, token_id next) {
  add_nll(-log_softmax(logits)[std::size_t(next)]);
}

void perplexity_accumulator::add_nll(double nll) {
  // Welford's update: no cancellation between a sum of squares and a squared mean.
  ++count_;
  const double delta = nll - mean_;
  mean_ += delta / count_;
  m2_ += delta * (nll - mean_);
}

double perplexity_accumulator::mean_nll() const { return mean_; }

double perplexity_accumulator::perplexity() const { return std::exp(mean_nll()); }

double perplexity_accumulator::perplexity_stderr() const {
  if (count_ < 2) return 0.0;
  const double variance = m2_ / count_;
  return perplexity() * std::sqrt(variance / (count_ - 1));
}

kl_sample compare_distributions(std::span<const float> base_logits, std::span<const float> logits, token_id next) {
  const auto base = log_softmax(base_logits);
  const auto model = log_softmax(logits);
  kl_sample s;
  for (std::size_t i = 0; i < base.size(); ++i) s.kl += std::exp(base[i]) * (base[i] - model[i]);
  s.kl = std::max(0.0, s.kl);  // rounding can leave a tiny negative sum
  const auto top = [](const std::vector<double>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
  s.is_same_top = top(base) == top(model);
  s.delta_p = std::exp(model[std::size_t(next)]) - std::exp(base[std::size_t(next)]);
  return s;
}

namespace {

/// The p-th percentile (0..100) of sorted values, linear between ranks.
double percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * double(sorted.size() - 1);
  const auto lo = std::size_t(rank);
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

kl_summary summarize(std::span<const kl_sample> samples) {
  kl_summary out;
  out.count = int(samples.size());
  if (samples.empty()) return out;
  std::vector<double> kl;
  double sum = 0.0, sum_sq = 0.0, delta_sq = 0.0;
  int same_top = 0;
  for (const auto& s : samples) {
    kl.push_back(s.kl);
    sum += s.kl;
    sum_sq += s.kl * s.kl;
    delta_sq += s.delta_p * s.delta_p;
    same_top += s.is_same_top ? 1 : 0;
  }
  const double n = double(samples.size());
  std::sort(kl.begin(), kl.end());
  out.mean_kl = sum / n;
  out.kl_stderr = n > 1 ? std::sqrt(std::max(0.0, sum_sq / n - out.mean_kl * out.mean_kl) / (n - 1)) : 0.0;
  out.median_kl = percentile(kl, 50);
  out.p99_kl = percentile(kl, 99);
  out.p999_kl = percentile(kl, 99.9);
  out.max_kl = kl.back();
  out.same_top_fraction = same_top / n;
  out.rms_delta_p = std::sqrt(delta_sq / n);
  return out;
}

}  // namespace inflight::bench
