#pragma once
/// A whole file, read-only in memory: mapped from the page cache, or read into
/// anonymous memory of its own (huge pages advised).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "core/base/error.hpp"

namespace inflight {

/// How a file's bytes come into memory.
enum class file_load {
  map,   ///< a private mapping: pages come and go with the page cache, shared with other readers
  read,  ///< read once into anonymous memory: streams faster on the CPU (huge pages, no page-cache
         ///< bookkeeping), costs the read at start and memory of its own
};

/// "map" | "read".
const char* to_string(file_load load);

/// Bytes of memory the system could still hand out (MemAvailable); 0 when unknown.
std::uint64_t available_memory_bytes();

/// Owns a private read-only mapping; move-only. An empty file maps to an empty span.
class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  /// Maps or reads `path`; errc::not_found when it does not exist, errc::io_error otherwise
  /// (a read that ends early included).
  static result<mapped_file> try_open(const std::filesystem::path& path, file_load load = file_load::map);

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void reset() noexcept;

  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::filesystem::path path_;
};

}  // namespace inflight
