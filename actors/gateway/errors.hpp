#pragma once
/// Errors at the edge: the OpenAI error envelope, built from inflight::error values
/// (their status, type and code come from the one table in core/base/error.cpp).

#include <concepts>
#include <expected>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/engine_api.hpp"
#include "core/base/error.hpp"

namespace inflight::gateway {

/// An error as a client sees it: {"error": {"message", "type", "param", "code"}}.
struct api_error {
  int status = 500;       ///< HTTP status
  std::string type;       ///< "invalid_request_error", "not_found_error", ...
  std::string message;
  std::string param;      ///< the request field at fault ("" = none)
  std::string code;       ///< machine-readable code ("" = none)
};

template <class T>
using api_result = std::expected<T, api_error>;

/// An engine error as the client sees it: status, type and code from errc's one table
/// (core/base/error.hpp), the message as the engine wrote it.
api_error to_api_error(const error& e, std::string param = {});
/// The error of a request that finished with finish_reason::error (its cause).
api_error finish_error(const finish_event& ev);

/// 400 invalid_request_error naming `param`.
api_error bad_request(std::string message, std::string param = {}, std::string code = {});
/// 404 (unknown route or model).
api_error not_found(std::string message, std::string code = {});
/// 405 for a route that exists under another method.
api_error method_not_allowed(std::string message);
/// 413 for a body over server.max_body_bytes.
api_error payload_too_large(long long limit);
/// 401 invalid_api_key: no `Authorization: Bearer <key>` header (`has_header` false), or
/// one whose key is not a configured one. The message never echoes the key.
api_error unauthorized(bool has_header);
/// 503 shutting_down: the server no longer accepts requests.
api_error shutting_down();
/// 503 for a gateway resource at its own limit (not the engine's queue), with its own `code`.
api_error unavailable(std::string message, std::string code);

/// {"message", "type", "param", "code"} (param / code null when empty).
nlohmann::json error_object(const api_error& e);
/// {"error": error_object(e)}.
nlohmann::json error_body(const api_error& e);

/// Serialises JSON for the wire: invalid UTF-8 inside strings (a token that is half a
/// character) becomes U+FFFD instead of throwing.
std::string dump_json(const nlohmann::json& j);
/// The same for JSON in the client's key order (a template, so that a braced list
/// `dump_json({{"k", v}})` is plain json, not ambiguous).
template <class J>
  requires std::same_as<J, nlohmann::ordered_json>
std::string dump_json(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

}  // namespace inflight::gateway
