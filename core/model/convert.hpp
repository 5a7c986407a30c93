#pragma once
/// Converting a model's matrices to another storage type: one type for every matrix,
/// or llama.cpp's Q4_K_M mix. Used at load (model.weight_dtype) and by the GGUF writer.
///
///   recipe   matrices                                     the rest
///   q8_0 ..  every matrix that type ("pure")
///   q4_k_m   classifier (or the tied embedding): q6_k;    q4_k
///            wv and w_down of the first and last eighth
///            of the layers and every third between: q6_k
///
/// A row that is not a whole number of the chosen type's blocks falls back as
/// llama-quantize does when its rows hold whole 32-value blocks: q2_k and q3_k to q4_0,
/// q4_k to q5_0, q5_k to q5_1, q6_k to q8_0; anything else to f16 (stories260K's FFN
/// width, 172, keeps w_down in f16).

#include <string>
#include <string_view>

#include "core/base/error.hpp"
#include "core/model/model_weights.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight {

/// Which matrix of a model a tensor is.
enum class matrix_role : std::uint8_t { token_embedding, classifier, wq, wk, wv, wo, w_gate, w_up, w_down };

struct quant_recipe {
  weight_dtype base = weight_dtype::f32;  ///< the type of every matrix the mix does not name
  bool is_q4_k_m = false;
};

/// A weight_dtype name ("q8_0", "bf16", ...) or "q4_k_m" (case does not matter).
result<quant_recipe> try_parse_recipe(std::string_view name);
std::string to_string(const quant_recipe& recipe);

/// The type the recipe gives one matrix (before any fallback for its width).
/// `is_tied`: the embedding is also the classifier.
weight_dtype dtype_for(const quant_recipe& recipe, matrix_role role, int layer, int num_layers, bool is_tied);
/// The type a row of `cols` values can take when `wanted` does not fit it.
weight_dtype fallback_for(weight_dtype wanted, std::int64_t cols);

/// The tensor stored as `to` (decoded and re-encoded; a copy when already `to`).
result<weight_tensor> try_convert(const weight_tensor& tensor, weight_dtype to, int num_threads = 0);
/// Converts every matrix in place, one at a time (the old storage is freed as it goes).
result<void> try_quantize_weights(model_weights& weights, const quant_recipe& recipe, int num_threads = 0);

}  // namespace inflight
