#include "core/base/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

namespace inflight {

namespace {

std::string describe_errno(const std::filesystem::path& path, const char* what) {
  return std::string("cannot ") + what + " '" + path.string() + "': " + std::strerror(errno);
}

/// Reads the whole of `fd` into fresh anonymous memory, read-only once full.
result<void*> read_whole(int fd, std::size_t size, const std::filesystem::path& path) {
  void* address = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) return make_error(errc::io_error, describe_errno(path, "allocate memory for"));
  ::madvise(address, size, MADV_HUGEPAGE);  // advice only: without it, 4 KiB pages
  constexpr std::size_t piece = std::size_t(64) << 20;
  for (std::size_t done = 0; done < size;) {
    const ssize_t got = ::pread(fd, static_cast<char*>(address) + done, std::min(size - done, piece), off_t(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      auto message = got < 0 ? describe_errno(path, "read")
                             : "cannot read '" + path.string() + "': it ended at byte " + std::to_string(done) +
                                   " of " + std::to_string(size);
      ::munmap(address, size);
      return make_error(errc::io_error, std::move(message));
    }
    done += std::size_t(got);
  }
  ::mprotect(address, size, PROT_READ);
  return address;
}

}  // namespace

const char* to_string(file_load load) { return load == file_load::read ? "read" : "map"; }

std::uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

mapped_file::~mapped_file() { reset(); }

void mapped_file::reset() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

result<mapped_file> mapped_file::try_open(const std::filesystem::path& path, file_load load) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const errc code = errno == ENOENT ? errc::not_found : errc::io_error;
    return make_error(code, describe_errno(path, "open"));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    auto message = describe_errno(path, "stat");
    ::close(fd);
    return make_error(errc::io_error, std::move(message));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return make_error(errc::io_error, "cannot map '" + path.string() + "': not a regular file");
  }
  mapped_file file;
  file.path_ = path;
  file.size_ = std::size_t(info.st_size);
  if (file.size_ > 0) {
    if (load == file_load::read) {
      auto address = read_whole(fd, file.size_, path);
      if (!address) {
        ::close(fd);
        file.size_ = 0;
        return std::unexpected(std::move(address.error()));
      }
      file.data_ = static_cast<const std::byte*>(*address);
    } else {
      void* address = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (address == MAP_FAILED) {
        auto message = describe_errno(path, "mmap");
        ::close(fd);
        file.size_ = 0;
        return make_error(errc::io_error, std::move(message));
      }
      file.data_ = static_cast<const std::byte*>(address);
    }
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

}  // namespace inflight
