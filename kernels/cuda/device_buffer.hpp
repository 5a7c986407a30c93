#pragma once
/// Owning device (or pinned host) allocations. Move-only; frees on destruction.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/status.hpp"

namespace inflight::kernels::cuda {

class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(device_buffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), is_host_(o.is_host_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      is_host_ = o.is_host_;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { reset(); }

  /// Replaces the contents with `bytes` of device memory (pinned host memory when `is_host`).
  status try_allocate(std::size_t bytes, bool is_host = false) {
    reset();
    if (bytes == 0) return status::ok();
    is_host_ = is_host;
    if (is_host) {
      INFLIGHT_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
    } else {
      INFLIGHT_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
    }
    bytes_ = bytes;
    return status::ok();
  }

  void reset() {
    // A failed free has nowhere to go; the pointer is dropped either way.
    if (ptr_ != nullptr) is_host_ ? cudaFreeHost(ptr_) : cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool is_host_ = false;
};

}  // namespace inflight::kernels::cuda
