#pragma once
/// Embeddings from a causal LM: one prefill-only forward pass over an input, its final
/// hidden states (after the final norm) pooled into one vector:
///
///   last:  the state of the last input token (decoder embedders: Qwen3-Embedding, E5-Mistral)
///   mean:  the mean of every input token's state
///   first: the state of the first token (CLS-style)
///
/// then, optionally, cut to its first `dimensions` values (Matryoshka models) and
/// L2-normalised. Which pooling and whether to normalise: the deployment's
/// embeddings.pooling / embeddings.normalize, where "auto" (the default) takes what the
/// model file states (model_pooling), else last token, normalised.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

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

/// What a model file says about its embeddings, as its loader read it: GGUF
/// `<arch>.pooling_type`, or a sentence-transformers folder's Pooling module
/// (1_Pooling/config.json) and whether a Normalize module follows it. All empty when the
/// file says nothing (a plain generative model).
struct model_pooling {
  std::optional<pooling_kind> kind;  ///< the stated pooling, when the engine implements it
  std::string stated;                ///< as stated ("mean", "cls", "rank", "weightedmean" ...); "" = nothing
  std::string source;                ///< where it is stated ("qwen3.pooling_type", ".../1_Pooling/config.json")
  std::optional<bool> normalize;     ///< sentence-transformers: a Normalize module follows the pooling

  bool is_stated() const { return !stated.empty(); }
};

/// ggml's pooling types (GGUF `<arch>.pooling_type`): 0 none, 1 mean, 2 cls, 3 last,
/// 4 rank; -1 (unspecified) states nothing. cls is `first`; none, rank and unknown
/// values are stated but not implemented (kind stays empty).
model_pooling gguf_pooling(std::int64_t pooling_type, std::string source);

/// How the engine makes an embedding.
struct embedding_recipe {
  pooling_kind pooling = pooling_kind::last;
  bool normalize = true;
  std::string origin;  ///< for the start-up log: "mean pooling (stated by ...), normalised"
};

/// The deployment's embeddings.pooling and embeddings.normalize (none: "auto") over
/// what the model states: an explicit setting wins; "auto" takes the model's pooling,
/// else the last token, and the model's Normalize module, else normalised.
/// errc::unsupported, naming what the model states and where, when "auto" meets a
/// pooling the engine does not implement (an explicit setting serves the model anyway).
result<embedding_recipe> try_resolve_embedding(std::optional<pooling_kind> pooling, std::optional<bool> normalize,
                                               const model_pooling& model);

}  // namespace inflight
