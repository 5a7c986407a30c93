#pragma once
/// Parsing of /v1/embeddings bodies (and WebSocket "embed" messages) into tokenized
/// inputs, and the response shape. Pure functions: no sockets, no engine.
///
///   request:  {model, input: string | [string] | [token id] | [[token id]],
///              encoding_format: "float" | "base64", dimensions, user,
///              input_type: "query" | "document", priority, cache_salt}
///   response: {object: "list", data: [{object: "embedding", index, embedding}], model,
///              usage: {prompt_tokens, total_tokens}}   input order
///
/// Each input becomes one prefill-only engine request (actors/gateway/embed_call.hpp).

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/served_model.hpp"

namespace inflight::gateway {

enum class embedding_encoding {
  float_list,  ///< "float": a JSON list of numbers
  base64,      ///< "base64": the float32 values, little-endian, base64 (what the openai clients ask for)
};

struct embed_request {
  std::vector<std::vector<token_id>> inputs;  ///< one per input, in input order
  embedding_encoding encoding = embedding_encoding::float_list;
  int dimensions = 0;     ///< the embeddings' length; 0 = the model's width
  bool is_query = false;  ///< input_type "query": text inputs start with embeddings.query_prefix
  std::string user;       ///< accepted, not used
  int priority = 0;
  std::string cache_salt;  ///< prefix caching: inputs share cached K/V only within a salt
  std::string adapter;     ///< the LoRA adapter the `model` field names ("": none)

  int num_inputs() const { return int(inputs.size()); }
  /// Tokens of every input together (the usage count).
  int num_prompt_tokens() const;
};

/// 400 embeddings_unavailable, with the reason the served model gives.
api_error embeddings_unavailable(const served_model& model);

/// A /v1/embeddings body (or a WebSocket "embed" message).
api_result<embed_request> try_parse_embeddings(const nlohmann::json& body, const served_model& model);

/// `embeddings[i]` belongs to input i of `request` (already cut and normalised).
nlohmann::json embeddings_response(const std::string& model_name, const embed_request& request,
                                   const std::vector<std::vector<float>>& embeddings);

/// The float32 values as little-endian bytes, base64 (RFC 4648, padded): what the
/// openai clients decode for encoding_format "base64".
std::string base64_floats(std::span<const float> values);

}  // namespace inflight::gateway
