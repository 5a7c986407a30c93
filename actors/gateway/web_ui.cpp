#include "actors/gateway/web_ui.hpp"

#include <array>
#include <cstddef>

#include "actors/gateway/engine_events.hpp"

namespace inflight::gateway {

// Generated at build time from actors/gateway/web/ (cmake/embed_files.cmake).
struct embedded_file {
  const char* name;
  const unsigned char* data;
  std::size_t size;
};
extern const embedded_file embedded_web_files[];
extern const std::size_t num_embedded_web_files;

namespace {

std::string_view content_type_of(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> types{{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".json", "application/json"},
  }};
  for (const auto& [ext, type] : types)
    if (name.ends_with(ext)) return type;
  return "application/octet-stream";
}

std::string_view file_name_of(std::string_view path) {
  if (!is_ui_path(path)) return {};
  return path.starts_with("/ui/") ? path.substr(4) : "index.html";
}

}  // namespace

bool is_ui_path(std::string_view path) { return path == "/" || path == "/index.html" || path.starts_with("/ui/"); }

std::optional<web_file> find_web_file(std::string_view path) {
  const auto name = file_name_of(path);
  if (name.empty()) return std::nullopt;
  for (std::size_t i = 0; i < num_embedded_web_files; ++i) {
    const auto& f = embedded_web_files[i];
    if (name == f.name)
      return web_file{{reinterpret_cast<const char*>(f.data), f.size}, content_type_of(name)};
  }
  return std::nullopt;
}

std::optional<http_reply> try_answer_ui(gateway_state& state, std::string_view path) {
  if (file_name_of(path).empty()) return std::nullopt;
  if (!state.settings().enable_ui) return error_reply(ui_disabled(path));
  auto file = find_web_file(path);
  if (!file) return error_reply(not_found("no file " + std::string(path) + " in the web UI", "route_not_found"));
  return http_reply{200, std::string(file->content_type), std::string(file->bytes), {}};
}

}  // namespace inflight::gateway
