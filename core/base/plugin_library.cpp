#include "core/base/plugin_library.hpp"

#include <dlfcn.h>

#include <cctype>
#include <utility>

namespace inflight {
namespace {

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

}  // namespace

bool is_valid_plugin_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

result<std::filesystem::path> find_plugin_file(const std::filesystem::path& plugin_dir, std::string_view name,
                                               std::string_view file_name, std::string_view what) {
  // The name becomes a file name: refuse anything that could leave the plugin dir.
  if (!is_valid_plugin_name(name))
    return make_error(errc::invalid_argument, "invalid " + std::string(what) + " name '" + std::string(name) +
                                                  "': use letters, digits, '_' or '-'");
  auto file = plugin_dir / file_name;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return make_error(errc::not_found,
                      std::string(what) + " '" + std::string(name) + "' not found: no file " + file.string());
  return file;
}

result<plugin_library> plugin_library::try_open(const std::filesystem::path& file, const char* symbol,
                                                std::string_view what) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return make_error(errc::io_error, "cannot load " + std::string(what) + " plugin " + file.string() + ": " +
                                          dl_error_text());
  dlerror();
  void* entry = dlsym(handle, symbol);
  if (entry == nullptr) {
    dlclose(handle);
    return make_error(errc::not_found, std::string(what) + " plugin " + file.string() + " does not export the symbol '" +
                                           symbol + "'");
  }
  return plugin_library(handle, entry);
}

plugin_library::plugin_library(plugin_library&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), symbol_(std::exchange(other.symbol_, nullptr)) {}

plugin_library& plugin_library::operator=(plugin_library&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    symbol_ = std::exchange(other.symbol_, nullptr);
  }
  return *this;
}

plugin_library::~plugin_library() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* plugin_library::release() { return std::exchange(handle_, nullptr); }

}  // namespace inflight
