#pragma once
/// How a sentence-transformers model folder pools its embeddings. modules.json lists
/// the modules applied after the transformer, each with its folder:
///
///   [{"idx": 0, "path": "",            "type": "sentence_transformers.models.Transformer"},
///    {"idx": 1, "path": "1_Pooling",   "type": "sentence_transformers.models.Pooling"},
///    {"idx": 2, "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
///
/// and the Pooling module's config.json says how (one of pooling_mode_cls_token,
/// pooling_mode_mean_tokens, pooling_mode_lasttoken, pooling_mode_max_tokens,
/// pooling_mode_mean_sqrt_len_tokens, pooling_mode_weightedmean_tokens set to true).
/// cls, mean and lasttoken are implemented (first, mean, last); anything else, several
/// modes at once, mean pooling that leaves the prompt out (include_prompt = false) or a
/// module the engine does not compute (Dense ...) is stated but not implemented.

#include <filesystem>
#include <string>
#include <string_view>

#include "core/base/error.hpp"
#include "core/model/pooling.hpp"

namespace inflight {

/// The pooling a Pooling module's config.json text states; `source` names the file.
result<model_pooling> try_parse_st_pooling_config(std::string_view json_text, const std::string& source);

/// The pooling `folder` states: nothing without modules.json (a plain causal LM; a
/// 1_Pooling/config.json alone is read too). A malformed file is errc::corrupt_file.
result<model_pooling> try_read_st_pooling(const std::filesystem::path& folder);

}  // namespace inflight
