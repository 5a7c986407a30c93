#pragma once
// Shared by the libFuzzer harnesses: invariant checks that abort (so libFuzzer keeps the
// input), and in-memory files for loaders that take a path.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

// An invariant of the code under test; a violation is a finding like a crash.
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace inflight::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A memfd holding `bytes`, reachable as /proc/self/fd/N: loaders that open, stat and
/// mmap a path see a real file, with no directory to clean up.
class memory_file {
 public:
  explicit memory_file(std::string_view bytes) : fd_(memfd_create("fuzz-input", 0)) {
    FUZZ_CHECK(fd_ >= 0);
    std::size_t done = 0;
    while (done < bytes.size()) {
      const auto n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      FUZZ_CHECK(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
  ~memory_file() { ::close(fd_); }
  memory_file(const memory_file&) = delete;
  memory_file& operator=(const memory_file&) = delete;

  std::filesystem::path path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

/// With FUZZ_VERBOSE set, why an input was refused: to check that seeds get past the
/// first checks of a parser (a seed that is refused explores little).
inline void note(std::string_view what) {
  static const bool is_verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
  if (is_verbose) std::fprintf(stderr, "refused: %.*s\n", static_cast<int>(what.size()), what.data());
}

/// Splits `input` at the first `separator`: {before, after}; after is empty without one.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view input, std::string_view separator) {
  const auto pos = input.find(separator);
  if (pos == std::string_view::npos) return {input, {}};
  return {input.substr(0, pos), input.substr(pos + separator.size())};
}

}  // namespace inflight::fuzz
