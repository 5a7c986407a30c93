#pragma once
/// Typed reads of request-body fields for every endpoint: absent or null means "keep
/// the default" (as OpenAI's API does); a field of the wrong type or out of range is a
/// 400 that names it.

#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

/// No value: the field was fine (or absent).
using opt_error = std::optional<api_error>;

/// The field, or nullptr when it is absent or null.
const nlohmann::json* field(const nlohmann::json& body, const char* key);

opt_error read_float(const nlohmann::json& body, const char* key, float& out);
/// An integer in [lo, hi]; integral floats (2.0) count as integers.
opt_error read_integer(const nlohmann::json& body, const char* key, long long lo, long long hi, long long& out);
opt_error read_int(const nlohmann::json& body, const char* key, long long lo, long long hi, int& out);
opt_error read_bool(const nlohmann::json& body, const char* key, bool& out);
opt_error read_string(const nlohmann::json& body, const char* key, std::string& out);

// The reads the translated APIs make of a body parsed in the client's key order.
const nlohmann::ordered_json* field(const nlohmann::ordered_json& body, const char* key);
opt_error read_int(const nlohmann::ordered_json& body, const char* key, long long lo, long long hi, int& out);
opt_error read_bool(const nlohmann::ordered_json& body, const char* key, bool& out);

/// Key order. A body is parsed twice: sorted (`json`, which the checks read) and as the
/// client sent it (`ordered_json`, parse_ordered_body), whose order reaches what a model
/// or a grammar sees: tool definitions, JSON Schemas (a schema's property order is the
/// order the constrained output writes them in), template variables.
/// The child of an ordered value, or null when `ordered` has none (or is null).
const nlohmann::ordered_json& ordered_child(const nlohmann::ordered_json& ordered, const char* key);
const nlohmann::ordered_json& ordered_child(const nlohmann::ordered_json& ordered, std::size_t i);
/// `value` in the client's key order: `ordered` where it holds the same value, else
/// `value` in its sorted order (no ordered body, or a body with duplicate keys).
nlohmann::ordered_json with_order(const nlohmann::json& value, const nlohmann::ordered_json& ordered);

/// inflight's (and vLLM's) own chat request fields, which the translated APIs
/// (/v1/messages, /v1/responses) pass to the chat body as they are: constraints, template
/// input, sampling and scheduling extensions.
std::span<const char* const> chat_extension_fields();

/// The scheduling fields every request to the engine may carry, read in one place:
/// `priority` (an integer in [-1e9, 1e9]) and `cache_salt` (a non-empty string).
opt_error read_scheduling_fields(const nlohmann::json& body, int& priority, std::string& cache_salt);

/// The optional `model` field must name the served model (or one of `aliases`, or of the
/// LoRA `adapters`, then written to `adapter`): 404 model_not_found otherwise.
opt_error check_model_name(const nlohmann::json& body, const std::string& served_name,
                           std::span<const std::string> aliases = {}, std::span<const std::string> adapters = {},
                           std::string* adapter = nullptr);

}  // namespace inflight::gateway
