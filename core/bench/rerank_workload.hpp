#pragma once
/// The rerank workload (../shared/workloads/README.md): requests of one query and many
/// documents, as text of given token lengths in the served model's tokenizer.
///   full:  20 requests, a query of 32 tokens, 100 documents of 256 tokens each
///   small:  5 requests, a query of 16 tokens, 100 documents of 64 tokens each

#include <random>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/bench/dataset.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight::bench {

struct rerank_case {
  std::string query;
  std::vector<std::string> documents;
};

struct rerank_shape {
  int num_requests = 5;
  int query_tokens = 16;
  int num_documents = 100;
  int document_tokens = 64;
};

rerank_shape rerank_shape_of(workload_size size);

/// The ids in [first_id, vocab) whose text alone is whole, printable, non-empty UTF-8
/// (no lone byte of a longer character, no control character): what text_of_tokens
/// draws from.
std::vector<token_id> whole_character_tokens(const tokenizer& tok, int first_id = 3);

/// Text that `tok` encodes (without BOS) to exactly `num_tokens` tokens when it can,
/// drawn from `ids` and settled by re-encoding; otherwise within a few.
std::string text_of_tokens(const tokenizer& tok, const std::vector<token_id>& ids, int num_tokens,
                           std::mt19937_64& rng);

/// The workload's requests; `num_requests` > 0 overrides the size's count.
result<std::vector<rerank_case>> rerank_workload(workload_size size, int num_requests, const tokenizer& tok,
                                                 std::mt19937_64& rng);

/// Tokens a rerank prompt adds to its query and document, in three parts: the template's
/// head and the instruction before the query (the same in every call), the document
/// line's head after the query (the same for a call's documents: with the query, the
/// prefix they share), and the template's tail after the document.
struct rerank_template_tokens {
  int before_query = 0;
  int before_document = 0;
  int after_document = 0;
};

/// The built-in Qwen3-Reranker template (rerank.template, rerank.instruction defaults)
/// in the llama2.c 32k tokenizer of the bench models; a test measures it.
inline constexpr rerank_template_tokens default_rerank_template_tokens{83, 4, 29};

/// The workload as token ids, for a simulation without a tokenizer: every prompt is the
/// template's head (before_query ids, one draw for the whole workload), its call's query
/// (query_tokens ids per call), the document line's head (before_document ids, one draw),
/// its document (document_tokens ids of its own) and the template's tail (after_document
/// ids, one draw); each a scoring request (is_score) of its call (group), all at t = 0.
/// Drawn from [3, vocab_size).
result<std::vector<bench_prompt>> rerank_prompts(workload_size size, int num_requests, rerank_template_tokens t,
                                                 int vocab_size, std::mt19937_64& rng);

}  // namespace inflight::bench
