#pragma once
// tests/hub/fake_hub.py as a child process of a test: a local Hub over a temporary
// folder of repositories, stopped when the fixture goes.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace inflight::test {

/// A fresh temporary folder, removed with the object.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("inflight-hub-" + std::to_string(rd()) + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// `n` pseudo-random bytes (an LFS-sized file of known content).
inline std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(rng());
  return s;
}

class fake_hub {
 public:
  /// Serves the repositories under `root` (ROOT/ORG/REPO/...); `args` are fake_hub.py's
  /// behaviour flags (--gated ORG/REPO, --corrupt ORG/REPO/PATH, --drop-once ...).
  explicit fake_hub(const std::filesystem::path& root, std::vector<std::string> args = {}) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      std::vector<std::string> argv = {"python3", std::string(INFLIGHT_SOURCE_DIR) + "/tests/hub/fake_hub.py", "--root",
                                       root.string()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execvp("python3", c.data());
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    char ch;
    while (::read(out[0], &ch, 1) == 1 && ch != '\n') line += ch;
    ::close(out[0]);
    if (!line.starts_with("PORT ")) throw std::runtime_error("fake_hub.py did not start: '" + line + "'");
    port_ = std::stoi(line.substr(5));
  }
  ~fake_hub() { stop(); }
  fake_hub(const fake_hub&) = delete;
  fake_hub& operator=(const fake_hub&) = delete;

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace inflight::test
