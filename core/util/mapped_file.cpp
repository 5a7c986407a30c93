#include "core/util/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace inflight {

namespace {

std::string describe_errno(const std::filesystem::path& path, const char* what) {
  return std::string("cannot ") + what + " '" + path.string() + "': " + std::strerror(errno);
}

}  // namespace

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

result<mapped_file> mapped_file::try_open(const std::filesystem::path& path) {
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
    void* address = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      auto message = describe_errno(path, "mmap");
      ::close(fd);
      file.size_ = 0;
      return make_error(errc::io_error, std::move(message));
    }
    file.data_ = static_cast<const std::byte*>(address);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

}  // namespace inflight
