#include "actors/gateway/json_fields.hpp"

#include <algorithm>

#include <climits>
#include <cmath>
#include <cstdint>

namespace inflight::gateway {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// One implementation for both key orders: a body parsed sorted (json) or as sent (ordered_json).

template <class J>
const J* field_of(const J& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

template <class J>
opt_error read_float_of(const J& body, const char* key, float& out) {
  const J* v = field_of(body, key);
  if (!v) return {};
  if (!v->is_number()) return bad_request(std::string(key) + " must be a number", key);
  const double d = v->template get<double>();
  if (!std::isfinite(d) || std::abs(d) > 1e30) return bad_request(std::string(key) + " is out of range", key);
  out = static_cast<float>(d);
  return {};
}

template <class J>
opt_error read_integer_of(const J& body, const char* key, long long lo, long long hi, long long& out) {
  const J* v = field_of(body, key);
  if (!v) return {};
  const std::string name(key);
  double value = 0.0;
  if (v->is_number_unsigned()) {
    const auto u = v->template get<std::uint64_t>();
    value = u > std::uint64_t(LLONG_MAX) ? 1e19 : double(u);
    if (u <= std::uint64_t(hi)) out = static_cast<long long>(u);
  } else if (v->is_number_integer()) {
    out = v->template get<std::int64_t>();
    value = double(out);
  } else if (v->is_number_float() && std::isfinite(v->template get<double>()) &&
             std::floor(v->template get<double>()) == v->template get<double>()) {
    value = v->template get<double>();
    if (value >= double(lo) && value <= double(hi)) out = static_cast<long long>(value);
  } else {
    return bad_request(name + " must be an integer", key);
  }
  if (value < double(lo)) return bad_request(name + " must be at least " + std::to_string(lo), key);
  if (value > double(hi)) return bad_request(name + " must be at most " + std::to_string(hi), key);
  return {};
}

template <class J>
opt_error read_int_of(const J& body, const char* key, long long lo, long long hi, int& out) {
  long long v = out;
  if (auto e = read_integer_of(body, key, lo, hi, v)) return e;
  out = static_cast<int>(v);
  return {};
}

template <class J>
opt_error read_bool_of(const J& body, const char* key, bool& out) {
  const J* v = field_of(body, key);
  if (!v) return {};
  if (!v->is_boolean()) return bad_request(std::string(key) + " must be a boolean", key);
  out = v->template get<bool>();
  return {};
}

template <class J>
opt_error read_string_of(const J& body, const char* key, std::string& out) {
  const J* v = field_of(body, key);
  if (!v) return {};
  if (!v->is_string()) return bad_request(std::string(key) + " must be a string", key);
  out = v->template get<std::string>();
  return {};
}

const ojson null_ordered;

}  // namespace

std::span<const char* const> chat_extension_fields() {
  static constexpr const char* fields[] = {
      "structured_outputs", "guided_json",       "guided_regex",        "guided_choice",          "guided_grammar",
      "guided_decoding_backend", "guided_whitespace_pattern", "thinking_budget", "chat_template_kwargs",
      "chat_template",      "add_generation_prompt", "continue_final_message", "min_p",           "seed",
      "priority",           "cache_salt",        "presence_penalty",    "frequency_penalty",      "repetition_penalty",
      "ignore_eos",         "stop_token_ids",    "logit_bias",          "ttft_target_ms",         "tpot_target_ms",
      "user",               "speculative"};
  return fields;
}

const json* field(const json& body, const char* key) { return field_of(body, key); }
const ojson* field(const ojson& body, const char* key) { return field_of(body, key); }
opt_error read_float(const json& body, const char* key, float& out) { return read_float_of(body, key, out); }
opt_error read_integer(const json& body, const char* key, long long lo, long long hi, long long& out) {
  return read_integer_of(body, key, lo, hi, out);
}
opt_error read_int(const json& body, const char* key, long long lo, long long hi, int& out) {
  return read_int_of(body, key, lo, hi, out);
}
opt_error read_int(const ojson& body, const char* key, long long lo, long long hi, int& out) {
  return read_int_of(body, key, lo, hi, out);
}
opt_error read_bool(const json& body, const char* key, bool& out) { return read_bool_of(body, key, out); }
opt_error read_bool(const ojson& body, const char* key, bool& out) { return read_bool_of(body, key, out); }
opt_error read_string(const json& body, const char* key, std::string& out) { return read_string_of(body, key, out); }

const ojson& ordered_child(const ojson& ordered, const char* key) {
  if (!ordered.is_object()) return null_ordered;
  auto it = ordered.find(key);
  return it == ordered.end() ? null_ordered : *it;
}

const ojson& ordered_child(const ojson& ordered, std::size_t i) {
  return ordered.is_array() && i < ordered.size() ? ordered[i] : null_ordered;
}

ojson with_order(const json& value, const ojson& ordered) {
  if (!ordered.is_null() && json(ordered) == value) return ordered;
  return ojson(value);
}

opt_error read_scheduling_fields(const json& body, int& priority, std::string& cache_salt) {
  if (auto e = read_int(body, "priority", -1000000000LL, 1000000000LL, priority)) return e;
  if (auto e = read_string(body, "cache_salt", cache_salt)) return e;
  if (field(body, "cache_salt") && cache_salt.empty())
    return bad_request("cache_salt must be a non-empty string", "cache_salt");
  return {};
}

opt_error check_model_name(const json& body, const std::string& served_name, std::span<const std::string> aliases,
                           std::span<const std::string> adapters, std::string* adapter) {
  std::string model;
  if (auto e = read_string(body, "model", model)) return e;
  if (model.empty() || model == served_name || std::find(aliases.begin(), aliases.end(), model) != aliases.end()) return {};
  if (std::find(adapters.begin(), adapters.end(), model) != adapters.end()) {
    if (adapter != nullptr) *adapter = model;
    return {};
  }
  return api_error{404, "not_found_error",
                   "The model `" + model + "` does not exist (this server serves `" + served_name + "`)", "model",
                   "model_not_found"};
}

}  // namespace inflight::gateway
