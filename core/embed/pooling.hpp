#pragma once
/// Embeddings from a causal LM: one prefill-only forward pass over an input, its final
/// hidden states (after the final norm) pooled into one vector:
///
///   last:  the state of the last input token (decoder embedders: Qwen3-Embedding, E5-Mistral)
///   mean:  the mean of every input token's state
///   first: the state of the first token (CLS-style)
///
/// then, optionally, cut to its first `dimensions` values (Matryoshka models) and
/// L2-normalised.

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace inflight {

enum class pooling_kind { last, mean, first };

/// "last", "mean", "first": the names of the embeddings.pooling setting.
const char* to_string(pooling_kind pooling);
std::optional<pooling_kind> try_pooling_from_name(std::string_view name);

/// Whether an input's cached prefix may be skipped: only the last token's state is
/// pooled (the prefix cache never covers the last token); mean and first pooling need
/// the states of the prefix too, so they compute every token.
inline bool can_share_prefix(pooling_kind pooling) { return pooling == pooling_kind::last; }

/// The finished embedding: the first `dimensions` values of `pooled` (0: all of them),
/// then L2-normalised when `normalize` (a zero vector stays zero).
std::vector<float> finish_embedding(std::span<const float> pooled, int dimensions, bool normalize);

}  // namespace inflight
