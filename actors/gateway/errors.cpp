#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

api_error to_api_error(const error& e, std::string param) {
  const errc_info& i = info(e.code);
  return api_error{i.http_status, i.api_type, e.message, std::move(param), i.name};
}

api_error finish_error(const finish_event& ev) {
  return to_api_error(ev.cause.value_or(error{errc::internal, "the request failed without a cause"}));
}

api_error bad_request(std::string message, std::string param, std::string code) {
  return api_error{400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
}

api_error not_found(std::string message, std::string code) {
  return api_error{404, "not_found_error", std::move(message), {}, std::move(code)};
}

api_error method_not_allowed(std::string message) {
  return api_error{405, "method_not_allowed", std::move(message), {}, {}};
}

api_error payload_too_large(long long limit) {
  return api_error{413, "invalid_request_error",
                   "the request body is larger than " + std::to_string(limit) + " bytes (server.max_body_bytes)",
                   {}, "payload_too_large"};
}

api_error unauthorized(bool has_header) {
  std::string message = has_header ? "Incorrect API key provided. The key goes in the header "
                                     "`Authorization: Bearer <key>`."
                                   : "You didn't provide an API key. You need to provide your API key in an "
                                     "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).";
  return api_error{401, "invalid_request_error", std::move(message), {}, "invalid_api_key"};
}

api_error shutting_down() { return to_api_error({errc::shutting_down, "the server is shutting down"}); }

api_error unavailable(std::string message, std::string code) {
  auto out = to_api_error({errc::unavailable, std::move(message)});
  out.code = std::move(code);
  return out;
}

nlohmann::json error_object(const api_error& e) {
  nlohmann::json j;
  j["message"] = e.message;
  j["type"] = e.type;
  j["param"] = e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param);
  j["code"] = e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code);
  return j;
}

nlohmann::json error_body(const api_error& e) { return {{"error", error_object(e)}}; }

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace inflight::gateway
