#include "core/engine/sched/plugin_dir.hpp"

namespace inflight {

std::vector<std::filesystem::path> plugin_dirs_near(const std::filesystem::path& executable) {
  const auto dir = executable.parent_path();
  return {(dir / ".." / "lib" / "inflight" / "plugins").lexically_normal(), (dir / ".." / "plugins").lexically_normal()};
}

result<std::filesystem::path> try_resolve_plugin_dir(std::string_view configured, const char* env_value,
                                                     const std::filesystem::path& executable) {
  if (!configured.empty()) return std::filesystem::path(configured);
  if (env_value != nullptr && *env_value != '\0') return std::filesystem::path(env_value);
  std::string tried;
  for (const auto& dir : plugin_dirs_near(executable)) {
    std::error_code ec;
    if (std::filesystem::is_directory(dir, ec)) return dir;
    tried += (tried.empty() ? "" : ", ") + dir.string();
  }
  return make_error(errc::not_found, "no policy plugin directory next to " + executable.string() + " (looked in " +
                                         tried + "); set scheduler.plugin_dir or INFLIGHT_PLUGIN_DIR");
}

result<std::filesystem::path> try_current_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return make_error(errc::io_error, "cannot read /proc/self/exe: " + ec.message());
  return path;
}

}  // namespace inflight
