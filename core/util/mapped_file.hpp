#pragma once
/// A read-only memory mapping of a whole file.

#include <cstddef>
#include <filesystem>
#include <span>

#include "core/error.hpp"

namespace inflight {

/// Owns a private read-only mapping; move-only. An empty file maps to an empty span.
class mapped_file {
 public:
  mapped_file() = default;
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  /// Maps `path`; errc::not_found when it does not exist, errc::io_error otherwise.
  static result<mapped_file> try_open(const std::filesystem::path& path);

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
