#include "hub/hub_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>

#include "hub/hub_name.hpp"

namespace inflight::hub {

namespace fs = std::filesystem;

namespace {

/// ".tmp.<pid>.<n>": a name no other writer (process or thread) uses at the same time.
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace

std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path default_cache_dir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (auto v = env_value(name); !v.empty()) return v;
  if (auto home = env_value("HF_HOME"); !home.empty()) return fs::path(home) / "hub";
  if (auto xdg = env_value("XDG_CACHE_HOME"); !xdg.empty()) return fs::path(xdg) / "huggingface" / "hub";
  return fs::path(env_value("HOME").empty() ? "/tmp" : env_value("HOME")) / ".cache" / "huggingface" / "hub";
}

std::string repo_folder_name(const std::string& repo) {
  std::string out = "models--";
  for (char c : repo) {
    if (c == '/') out += "--";
    else out += c;
  }
  return out;
}

repo_cache::repo_cache(fs::path cache_dir, const std::string& repo)
    : cache_dir_(std::move(cache_dir)), folder_(cache_dir_ / repo_folder_name(repo)) {}

fs::path repo_cache::lock_file(const std::string& etag) const {
  return cache_dir_ / ".locks" / folder_.filename() / (etag + ".lock");
}

std::optional<std::string> repo_cache::commit_of(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(folder_ / "refs" / revision);
  std::string commit;
  if (!(in >> commit) || !is_commit_hash(commit)) return std::nullopt;
  return commit;
}

result<void> repo_cache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return {};
  const auto path = folder_ / "refs" / revision;
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + unique_suffix();
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit;  // no newline: huggingface_hub writes none
    if (!out) return make_error(errc::io_error, tmp + ": cannot write");
  }
  fs::rename(tmp, path, ec);
  if (ec) return make_error(errc::io_error, path.string() + ": " + ec.message());
  return {};
}

result<void> repo_cache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  const auto target = pointer(commit, file);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return make_error(errc::io_error, target.parent_path().string() + ": " + ec.message());
  const auto relative = fs::path(blob(etag)).lexically_relative(target.parent_path());
  // Made aside, then renamed over the target: another process linking the same file
  // at the same time never sees it missing.
  const auto aside = fs::path(target.string() + unique_suffix());
  fs::create_symlink(relative, aside, ec);
  if (!ec) fs::rename(aside, target, ec);
  if (ec) {
    fs::remove(aside);
    return make_error(errc::io_error, target.string() + ": cannot link to its blob: " + ec.message());
  }
  return {};
}

bool repo_cache::has_file(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(pointer(commit, file), ec);  // follows the link
}

std::vector<std::string> repo_cache::snapshot_files(const std::string& commit) const {
  std::vector<std::string> files;
  std::error_code ec;
  const auto root = snapshot(commit);
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (fs::is_regular_file(it->path(), ec2)) files.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace inflight::hub
