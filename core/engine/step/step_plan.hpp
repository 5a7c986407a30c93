#pragma once
/// One engine step as a value: the scheduler's plan (a ragged batch) and the
/// executor's result. See kernels/cpu/llama.hpp for how the backend flattens it.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/types.hpp"
#include "core/engine/request/sampling_params.hpp"

namespace inflight {

struct lora_adapter;  // core/model/lora.hpp

/// Which final hidden states (after the final norm) a step returns for one sequence:
/// prefill-only embeddings.
enum class hidden_output : std::uint8_t {
  none,
  first,  ///< the state of tokens[0]
  last,   ///< the state of the last of `tokens`
  sum,    ///< the sum of the states of all of `tokens` (mean pooling adds its chunks up)
};

/// One scheduled sequence in a step.
struct seq_step {
  seq_id id = 0;
  std::vector<token_id> tokens;      ///< to process now: one for a decode, a chunk for a prefill
  int start_position = 0;            ///< position of tokens[0] (= tokens already in the KV cache)
  std::vector<block_id> block_table; ///< covers positions [0, start_position + tokens.size())
  bool do_sample = false;            ///< sample a token after the last of `tokens`
  /// Vocabulary rows whose logits to return after the last of `tokens` (prefill-only
  /// scoring): only these rows of the classifier are computed. Empty: none.
  std::vector<token_id> logit_rows{};
  /// Final hidden states to return (prefill-only embeddings): one vector of the model's
  /// width, see hidden_output.
  hidden_output hidden = hidden_output::none;
  /// Full logit rows of the last `num_tail_logits` tokens, for a caller of the CPU
  /// backend's forward() (perplexity); never with do_sample. The engine leaves it 0.
  int num_tail_logits = 0;
  sampling_params params;            ///< used when do_sample
  std::uint64_t seed = 0;            ///< the sequence's RNG seed (sequence::seed): the only seed of a step
  std::uint64_t sample_index = 0;    ///< number of tokens sampled before (position in the RNG stream)
  /// Tokens the penalties look at (prompt + generated) when params.has_penalties();
  /// generated ones start at `num_prompt_tokens`.
  std::vector<token_id> history;
  int num_prompt_tokens = 0;
  /// The grammar's allowed next tokens when do_sample and params.grammar is set (bit id % 64
  /// of word id / 64; ids past the last word are disallowed), filled by the scheduler, which
  /// owns the sequence's grammar state; the executor only applies it. Empty = unconstrained.
  std::vector<std::uint64_t> allowed_tokens{};
  /// Speculative decoding: the last `num_draft` of `tokens` are a drafter's guesses, not
  /// the sequence's yet. A sampled step then samples num_draft + 1 rows, row i after
  /// tokens[0 .. size - num_draft + i), keeps the drafted tokens while each equals what
  /// its row sampled, and ends with the first token that differs (or the one after the
  /// whole draft): see sample_rows. 0: an ordinary step.
  int num_draft = 0;
  /// The grammar's masks of rows 1..num_draft, each allowed_tokens.size() words, back to
  /// back (the scheduler's matcher walked the draft); empty without a grammar.
  std::vector<std::uint64_t> draft_allowed_tokens{};
  /// The LoRA adapter the sequence runs with (an index of step_plan::adapters), -1: the
  /// base model alone.
  int adapter = -1;

  /// Drafted token i (0-based).
  token_id draft_token(int i) const { return tokens[tokens.size() - std::size_t(num_draft) + std::size_t(i)]; }
  /// Rows of logits the step samples from: num_draft + 1, or 0 without do_sample.
  int num_sample_rows() const { return do_sample ? num_draft + 1 : 0; }
};

struct step_plan {
  std::uint64_t step_id = 0;
  std::vector<seq_step> seqs;
  /// The LoRA adapters of this step's sequences, each once (seq_step::adapter indexes
  /// them): the step holds them, so an adapter unloaded meanwhile stays whole for it.
  std::vector<std::shared_ptr<const lora_adapter>> adapters;

  int num_tokens() const {
    int n = 0;
    for (const auto& s : seqs) n += static_cast<int>(s.tokens.size());
    return n;
  }
};

struct top_logprob {
  token_id token = 0;
  float logprob = 0.0f;
};

struct sampled_token {
  seq_id id = 0;
  token_id token = 0;
  float logprob = 0.0f;                  ///< of the chosen token (log-softmax of raw logits)
  std::vector<top_logprob> top_logprobs; ///< when params.logprobs > 0
};

/// The logits of a seq_step's logit_rows, in their order.
struct seq_row_logits {
  seq_id id = 0;
  std::vector<float> values;
};

/// A seq_step's hidden output: one vector of the model's width.
struct seq_hidden {
  seq_id id = 0;
  std::vector<float> values;
};

struct step_result {
  std::uint64_t step_id = 0;
  /// Per seq_step with do_sample, in plan order: one token, or for a drafted step the
  /// kept drafted tokens and the one after them (1 to num_draft + 1 tokens).
  std::vector<sampled_token> tokens;
  std::vector<seq_row_logits> rows{};    ///< one per seq_step with logit_rows, in plan order
  std::vector<seq_hidden> hidden{};      ///< one per seq_step with a hidden output, in plan order
  double backend_seconds = 0.0;       ///< time spent inside the backend
};

}  // namespace inflight
