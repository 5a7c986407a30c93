#include "core/bench/perplexity.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

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

int llama_row_values(int n_vocab) { return 2 * ((n_vocab + 1) / 2) + 4; }

void encode_llama_log_probs(std::span<const float> logits, std::uint16_t* out) {
  const int n = int(logits.size());
  float max_logit = logits[0], min_logit = logits[0];
  for (float l : logits) {
    max_logit = std::max(max_logit, l);
    min_logit = std::min(min_logit, l);
  }
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - max_logit);
  const float log_sum_exp = float(std::log(sum_exp));
  const float head[2] = {(max_logit - min_logit) / 65535.0f, min_logit - max_logit - log_sum_exp};
  std::memcpy(out, head, sizeof(head));
  std::uint16_t* values = out + 4;
  std::fill(values, values + (llama_row_values(n) - 4), std::uint16_t(0));
  if (head[0] == 0.0f) return;
  const float inv_scale = 1.0f / head[0];
  for (int i = 0; i < n; ++i) {
    if (logits[i] > min_logit) values[i] = std::uint16_t(std::lround(inv_scale * (logits[i] - min_logit)));
  }
}

std::vector<float> decode_llama_log_probs(const std::uint16_t* row, int n_vocab) {
  float head[2];
  std::memcpy(head, row, sizeof(head));
  std::vector<float> out(static_cast<std::size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) out[std::size_t(i)] = head[1] + head[0] * float(row[4 + i]);
  return out;
}

std::string llama_logits_head(int ctx, int n_vocab, const std::vector<std::int32_t>& tokens, int num_chunks) {
  std::string head = "_logits_";
  const auto put = [&](const void* p, std::size_t n) { head.append(static_cast<const char*>(p), n); };
  const std::uint32_t n_ctx = std::uint32_t(ctx);
  put(&n_ctx, 4);
  put(&n_vocab, 4);
  put(&num_chunks, 4);
  put(tokens.data(), std::size_t(ctx) * std::size_t(num_chunks) * 4);
  return head;
}

}  // namespace inflight::bench
