#include "actors/gateway/json_fields.hpp"

#include <climits>
#include <cmath>

namespace inflight::gateway {

using nlohmann::json;

const json* field(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

opt_error read_float(const json& body, const char* key, float& out) {
  const json* v = field(body, key);
  if (!v) return {};
  if (!v->is_number()) return bad_request(std::string(key) + " must be a number", key);
  const double d = v->get<double>();
  if (!std::isfinite(d) || std::abs(d) > 1e30) return bad_request(std::string(key) + " is out of range", key);
  out = static_cast<float>(d);
  return {};
}

opt_error read_integer(const json& body, const char* key, long long lo, long long hi, long long& out) {
  const json* v = field(body, key);
  if (!v) return {};
  const std::string name(key);
  double value = 0.0;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    value = u > std::uint64_t(LLONG_MAX) ? 1e19 : double(u);
    if (u <= std::uint64_t(hi)) out = static_cast<long long>(u);
  } else if (v->is_number_integer()) {
    out = v->get<std::int64_t>();
    value = double(out);
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>()) {
    value = v->get<double>();
    if (value >= double(lo) && value <= double(hi)) out = static_cast<long long>(value);
  } else {
    return bad_request(name + " must be an integer", key);
  }
  if (value < double(lo)) return bad_request(name + " must be at least " + std::to_string(lo), key);
  if (value > double(hi)) return bad_request(name + " must be at most " + std::to_string(hi), key);
  return {};
}

opt_error read_int(const json& body, const char* key, long long lo, long long hi, int& out) {
  long long v = out;
  if (auto e = read_integer(body, key, lo, hi, v)) return e;
  out = static_cast<int>(v);
  return {};
}

opt_error read_bool(const json& body, const char* key, bool& out) {
  const json* v = field(body, key);
  if (!v) return {};
  if (!v->is_boolean()) return bad_request(std::string(key) + " must be a boolean", key);
  out = v->get<bool>();
  return {};
}

opt_error read_string(const json& body, const char* key, std::string& out) {
  const json* v = field(body, key);
  if (!v) return {};
  if (!v->is_string()) return bad_request(std::string(key) + " must be a string", key);
  out = v->get<std::string>();
  return {};
}

opt_error read_scheduling_fields(const json& body, int& priority, std::string& cache_salt) {
  if (auto e = read_int(body, "priority", -1000000000LL, 1000000000LL, priority)) return e;
  if (auto e = read_string(body, "cache_salt", cache_salt)) return e;
  if (field(body, "cache_salt") && cache_salt.empty())
    return bad_request("cache_salt must be a non-empty string", "cache_salt");
  return {};
}

opt_error check_model_name(const json& body, const std::string& served_name) {
  std::string model;
  if (auto e = read_string(body, "model", model)) return e;
  if (model.empty() || model == served_name) return {};
  return api_error{404, "not_found_error",
                   "The model `" + model + "` does not exist (this server serves `" + served_name + "`)", "model",
                   "model_not_found"};
}

}  // namespace inflight::gateway
