#pragma once
/// A complete HTTP answer of the endpoints answered at once (routes.hpp, web_ui.hpp).

#include <string>

#include <nlohmann/json.hpp>

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

/// A complete HTTP answer.
struct http_reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  ///< the Allow header of a 405
};

http_reply json_reply(int status, const nlohmann::json& body);
http_reply error_reply(const api_error& e);

}  // namespace inflight::gateway
