#pragma once
/// Perplexity and KL divergence of a model's next-token distributions, in the manner of
/// llama.cpp's `llama-perplexity`: the text is tokenized once (with BOS), cut into
/// chunks of `ctx` tokens whose first token is replaced by BOS, and in each chunk the
/// tokens after the first half are scored from the logits of the token before them:
///
///   chunk:   | BOS t1 t2 ... t_{first} ... t_{ctx-1} |
///   scored:                   ^ logits at first .. ctx-2 predict t_{first+1} .. t_{ctx-1}
///
/// so every scored token has at least ctx/2 tokens of context. Against a base model
/// (fp32) the same positions give the KL divergence KL(base || model), the top-1
/// agreement and the change of the probability of the right token.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/base/types.hpp"

namespace inflight::bench {

/// Where a text of `num_tokens` tokens is cut: `num_chunks` chunks of `ctx` tokens
/// (a remainder shorter than a chunk is dropped), each scored from index `first`.
struct perplexity_chunks {
  int ctx = 0;
  int num_chunks = 0;
  int first = 0;  ///< ctx / 2: logits of positions first .. ctx-2 are scored
  int num_scored() const { return ctx - 1 - first; }
};

/// Chunks of `ctx` tokens (ctx >= 2), at most `max_chunks` of them (0: no limit).
perplexity_chunks plan_perplexity_chunks(int num_tokens, int ctx, int max_chunks);

/// log-softmax of one row of logits, in double precision.
std::vector<double> log_softmax(std::span<const float> logits);

/// Sums over scored tokens; ppl() = exp(mean negative log-likelihood).
class perplexity_accumulator {
 public:
  /// Scores `next` from one row of logits.
  void add(std::span<const float> logits, token_id next);
  void add_nll(double nll);
  int count() const { return count_; }
  double mean_nll() const;
  double perplexity() const;
  /// Standard error of the perplexity (delta method: ppl x stderr of the mean NLL).
  double perplexity_stderr() const;

 private:
  double mean_ = 0.0, m2_ = 0.0;  ///< running mean and sum of squared deviations
  int count_ = 0;
};

/// One scored position of a model against a base model.
struct kl_sample {
  double kl = 0.0;          ///< KL(base || model) over the vocabulary, nats
  bool is_same_top = false; ///< both put the most probability on the same token
  double delta_p = 0.0;     ///< p_model(next) - p_base(next)
};

kl_sample compare_distributions(std::span<const float> base_logits, std::span<const float> logits, token_id next);

/// Everything llama-perplexity --kl-divergence reports.
struct kl_summary {
  int count = 0;
  double mean_kl = 0.0, kl_stderr = 0.0, median_kl = 0.0, p99_kl = 0.0, p999_kl = 0.0, max_kl = 0.0;
  double same_top_fraction = 0.0;
  double rms_delta_p = 0.0;  ///< sqrt(mean delta_p^2)
};

kl_summary summarize(std::span<const kl_sample> samples);

/// llama.cpp's logits file (llama-perplexity --kl-divergence-base): "_logits_", n_ctx
/// (u32), n_vocab, n_chunk (i32), the chunks' tokens (i32), then for every scored
/// position of every chunk one row of llama_row_values(n_vocab) u16: the scale and
/// the smallest log-probability (two floats), then each token's log-probability as
/// round((logit - low) / scale) over [max - 16, max] (0 below). llama-perplexity
/// --kl-divergence then scores its own model against these distributions on these tokens.
int llama_row_values(int n_vocab);
/// One row: `out` holds llama_row_values(logits.size()) values.
void encode_llama_log_probs(std::span<const float> logits, std::uint16_t* out);
/// The log-probabilities a row encodes (for tests).
std::vector<float> decode_llama_log_probs(const std::uint16_t* row, int n_vocab);
/// The file's head: magic, sizes and every chunk's tokens.
std::string llama_logits_head(int ctx, int n_vocab, const std::vector<std::int32_t>& tokens, int num_chunks);

}  // namespace inflight::bench
