#pragma once
/// The built-in web UI: a playground and a live view of the engine's steps. Its files
/// (actors/gateway/web/) are compiled into the binary (cmake/embed_files.cmake), so it
/// works offline and from an installed tree. GET / serves index.html, GET /ui/<file> the
/// rest. Both the page and its feed (GET /v1/engine/events) answer 404 when
/// server.enable_ui = false.

#include <optional>
#include <string_view>

#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/http_reply.hpp"

namespace inflight::gateway {

/// The UI's paths: /, /index.html and /ui/<file>. They answer without an API key (the
/// UI's own API calls need one).
bool is_ui_path(std::string_view path);

/// A file of the UI: its bytes and content type; nullopt for a path that is not one.
struct web_file {
  std::string_view bytes;
  std::string_view content_type;
};
std::optional<web_file> find_web_file(std::string_view path);

/// The answer to GET `path` when it is a path of the UI (a 404 when the UI is off);
/// nullopt for any other path.
std::optional<http_reply> try_answer_ui(gateway_state& state, std::string_view path);

}  // namespace inflight::gateway
