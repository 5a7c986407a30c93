#include "actors/gateway/http_reply.hpp"

namespace inflight::gateway {

using nlohmann::json;

http_reply json_reply(int status, const json& body) { return {status, "application/json", dump_json(body), {}}; }

http_reply error_reply(const api_error& e) {
  return json_reply(e.status, error_body(e));
}

}  // namespace inflight::gateway
