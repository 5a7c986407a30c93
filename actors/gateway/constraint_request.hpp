#pragma once
/// Structured outputs and logit_bias in a request body. Every way of asking for a
/// constraint maps to one grammar_spec:
///   response_format        {"type": "text"} (none), {"type": "json_object"} (any JSON object),
///                          {"type": "json_schema", "json_schema": {"name", "schema", "strict"}};
///                          llama.cpp's {"type": "json_object" | "json_schema", "schema": {...}} too
///   structured_outputs     vLLM: {"json"}, {"regex"}, {"choice"}, {"grammar"} (GBNF), {"json_object": true}
///   guided_json, guided_regex, guided_choice, guided_grammar   vLLM's older fields
///   json_schema, grammar   llama.cpp server's fields
/// At most one may be given. The spec is compiled through the served model's
/// grammar_cache here, at the gateway, so a refused schema is a 400 before anything is
/// queued and compiling never runs on the engine's step loop.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/json_fields.hpp"
#include "actors/gateway/served_model.hpp"
#include "core/engine/request/sampling_params.hpp"
#include "core/grammar/grammar_cache.hpp"

namespace inflight::gateway {

/// A constraint and the request field that asked for it (named in errors).
struct named_constraint {
  grammar_spec spec;
  std::string param;
};

/// The one constraint of `body`, none when it asks for none. Two or more, or a field of
/// the wrong shape, is a 400 naming the field. `ordered`: the same body in the client's
/// key order (parse_ordered_body), whose schemas keep their property order; null: sorted.
api_result<std::optional<named_constraint>> try_parse_constraint(const nlohmann::json& body,
                                                                 const nlohmann::ordered_json& ordered = nullptr);

/// Compiles (or finds) `c` for the model's vocabulary, its token index warmed up. A
/// grammar the compiler refuses is a 400 naming `c.param`, with the compiler's message
/// (which names the keyword and its path in the schema).
api_result<std::shared_ptr<const token_index>> try_compile_constraint(const served_model& m,
                                                                      const named_constraint& c);

/// logit_bias: {"<token id>": bias in [-100, 100]}; a key that is not an integer token id
/// of the vocabulary or a bias out of range is a 400. Entries in token-id order.
opt_error parse_logit_bias(const nlohmann::json& body, const served_model& m, std::vector<logit_bias_entry>& out);

}  // namespace inflight::gateway
