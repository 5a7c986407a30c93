#pragma once
// Helpers of the [gpu] tests: device arrays, bf16/fp16 round trips, tolerances.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/kernels.hpp"

namespace inflight::test::gpu {

namespace kc = inflight::kernels::cuda;

/// Fails the test unless a CUDA device is present: a [gpu] test that ran nothing must not pass.
inline void require_device() {
  int count = 0;
  const auto rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) FAIL("no CUDA device: the [gpu] tests need one");
}

inline void require_ok(const kc::status& st) {
  INFO(st.describe());
  REQUIRE(st.is_ok());
}

inline std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// fp32 values on the device.
inline kc::device_buffer upload_f32(const std::vector<float>& v) {
  kc::device_buffer b;
  require_ok(b.try_allocate(std::max<std::size_t>(1, v.size()) * sizeof(float)));
  REQUIRE(cudaMemcpy(b.as(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  return b;
}

inline kc::device_buffer upload_i32(const std::vector<std::int32_t>& v) {
  kc::device_buffer b;
  require_ok(b.try_allocate(std::max<std::size_t>(1, v.size()) * sizeof(std::int32_t)));
  REQUIRE(cudaMemcpy(b.as(), v.data(), v.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice) == cudaSuccess);
  return b;
}

/// Values converted to `dt` on the device.
inline kc::device_buffer upload(const std::vector<float>& v, kc::dtype dt) {
  auto f32 = upload_f32(v);
  kc::device_buffer b;
  require_ok(b.try_allocate(std::max<std::size_t>(1, v.size()) * kc::dtype_bytes(dt)));
  require_ok(kc::convert_from_f32(dt, b.as(), f32.as<float>(), std::int64_t(v.size()), nullptr));
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return b;
}

inline std::vector<float> download_f32(const kc::device_buffer& b, std::size_t n) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<float> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.as(), n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

inline std::vector<std::int32_t> download_i32(const kc::device_buffer& b, std::size_t n) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<std::int32_t> v(n);
  REQUIRE(cudaMemcpy(v.data(), b.as(), n * sizeof(std::int32_t), cudaMemcpyDeviceToHost) == cudaSuccess);
  return v;
}

/// n values of `dt` from the device, as floats.
inline std::vector<float> download(const kc::device_buffer& b, std::size_t n, kc::dtype dt) {
  kc::device_buffer f32;
  require_ok(f32.try_allocate(std::max<std::size_t>(1, n) * sizeof(float)));
  require_ok(kc::convert_to_f32(dt, f32.as<float>(), b.as(), std::int64_t(n), nullptr));
  return download_f32(f32, n);
}

/// The values `dt` can hold nearest to v (what the GPU kernels see).
inline std::vector<float> rounded(const std::vector<float>& v, kc::dtype dt) { return download(upload(v, dt), v.size(), dt); }

/// Relative tolerance of one rounding to `dt` plus fp32 accumulation-order noise.
inline float tolerance(kc::dtype dt) { return dt == kc::dtype::bf16 ? 2e-2f : 4e-3f; }

/// Every |got - want| <= tol * (1 + |want|); reports the worst element.
inline void require_close(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  REQUIRE(got.size() == want.size());
  if (got.empty()) return;
  std::size_t worst = 0;
  float worst_excess = -1.0f;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float excess = std::fabs(got[i] - want[i]) - tol * (1.0f + std::fabs(want[i]));
    if (!(excess <= worst_excess) || std::isnan(got[i])) {
      worst_excess = std::isnan(got[i]) ? INFINITY : excess;
      worst = i;
    }
  }
  INFO("worst element " << worst << ": got " << got[worst] << ", want " << want[worst] << ", tol " << tol);
  REQUIRE(worst_excess <= 0.0f);
}

inline const char* name_of(kc::dtype dt) { return dt == kc::dtype::bf16 ? "bf16" : "fp16"; }

}  // namespace inflight::test::gpu
