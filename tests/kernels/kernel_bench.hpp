#pragma once
// Shared pieces of inflight_kernel_bench: options, random typed matrices, timing.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"

namespace inflight::bench {

namespace kc = inflight::kernels::cpu;

struct options {
  int threads = 2, tokens = 128, rounds = 5;
  std::string isa, type;
  std::string forward;     ///< non-empty: the forward pass of this model type (f32, q8_0, q4_0, q4_k_m, ...)
  std::string kv = "f16";  ///< the forward pass's KV cache type
  int profile = 0;         ///< > 0: where a one-stream decode step's time goes at this context
};

struct shape {
  int rows, cols, count;  ///< a matrix [rows x cols], `count` of them per step
};

inline options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") o.threads = std::stoi(value);
    if (flag == "--tokens") o.tokens = std::stoi(value);
    if (flag == "--rounds") o.rounds = std::stoi(value);
    if (flag == "--isa") o.isa = value;
    if (flag == "--type") o.type = value;
    if (flag == "--forward") o.forward = value;
    if (flag == "--kv") o.kv = value;
    if (flag == "--profile") o.profile = std::stoi(value);
  }
  return o;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

inline void print_header(const options& o) {
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::printf("kernel bench: %s, load average %s, %d threads, bench-110M shapes, best of %d\n", date,
              first_line("/proc/loadavg").c_str(), o.threads, o.rounds);
}

/// Random rows of `type`; the scales of quantized blocks set to a sane half (0.01).
inline std::vector<std::byte> random_matrix(kc::weight_type type, int rows, int cols, std::mt19937& rng) {
  using namespace kc;
  const std::int64_t rb = inflight::row_bytes(type, cols);
  std::vector<std::byte> bytes(std::size_t(rb * rows));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : bytes) b = std::byte(byte(rng));
  const auto layout = layout_of(type);
  const std::uint16_t scale = float_to_fp16(0.01f);
  auto set_half = [&](std::size_t at) { std::memcpy(bytes.data() + at, &scale, 2); };
  if (type == weight_type::f32 || type == weight_type::f16 || type == weight_type::bf16) {
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (std::int64_t i = 0; i < std::int64_t(rows) * cols; ++i) {
      const float v = normal(rng);
      if (type == weight_type::f32) std::memcpy(bytes.data() + 4 * i, &v, 4);
      const std::uint16_t h = type == weight_type::f16 ? float_to_fp16(v) : float_to_bf16(v);
      if (type != weight_type::f32) std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
    return bytes;
  }
  for (std::size_t b = 0; b < bytes.size(); b += std::size_t(layout.block_bytes)) {
    if (type == weight_type::q6_k) {
      set_half(b + 208);
    } else {
      set_half(b);
      if (type == weight_type::q4_k || type == weight_type::q5_k) set_half(b + 2);
    }
  }
  return bytes;
}

/// The forward pass figures (forward_bench.cpp).
int run_forward_bench(const options& o);

}  // namespace inflight::bench
