#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

api_error to_api_error(const error& e, std::string param) {
  api_error out;
  out.message = e.message;
  out.param = std::move(param);
  switch (e.code) {
    case errc::invalid_argument:
      out.status = 400;
      out.type = "invalid_request_error";
      break;
    case errc::not_found:
      out.status = 404;
      out.type = "not_found_error";
      break;
    case errc::out_of_memory:  // the engine's waiting queue is full
      out.status = 503;
      out.type = "service_unavailable_error";
      out.code = "queue_full";
      break;
    case errc::unsupported:  // the engine refuses while it shuts down
      out.status = 503;
      out.type = "service_unavailable_error";
      out.code = "shutting_down";
      break;
    case errc::cancelled:
      out.status = 499;
      out.type = "cancelled_error";
      break;
    case errc::timeout:
      out.status = 504;
      out.type = "timeout_error";
      break;
    case errc::io_error:
    case errc::corrupt_file:
    case errc::internal:
    case errc::backend_error:
      out.status = 500;
      out.type = "internal_server_error";
      break;
  }
  return out;
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

api_error unavailable(std::string message, std::string code) {
  return api_error{503, "service_unavailable_error", std::move(message), {}, std::move(code)};
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
