// Figures of the CPU products: for each weight type and kernel table, a decode step's
// matrix-vector products (GB/s of weight bytes, beside this machine's read bandwidth)
// and a prompt step's matrix-matrix products (tokens/s), on the bench-110M matrices.
// Not a test: it asserts nothing and prints what it measures.
//
//   inflight_kernel_bench [--threads 2] [--tokens 128] [--rounds 5] [--isa NAME] [--type NAME]
#include <omp.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"
#include "tests/kernels/kernel_bench.hpp"

using namespace inflight::kernels::cpu;

namespace {

using namespace inflight::bench;

// bench-110M: 12 layers of wq, wk, wv, wo [768 x 768], w_gate, w_up [2048 x 768], w_down [768 x 2048]; the classifier.
const shape layer_shapes[] = {{768, 768, 48}, {2048, 768, 24}, {768, 2048, 12}};
const shape classifier_shape = {32000, 768, 1};

/// Read bandwidth of `threads` threads summing 1 GiB (the best of 3 passes), in GB/s.
double read_bandwidth(int threads) {
  const std::size_t n = (std::size_t(1) << 30) / sizeof(std::uint64_t);
  std::vector<std::uint64_t> data(n, 1);
  double best = 0.0;
  std::uint64_t sink = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(threads) reduction(+ : sink) schedule(static)
    for (std::size_t i = 0; i < n; i += 4) sink += data[i] + data[i + 1] + data[i + 2] + data[i + 3];
    best = std::max(best, double(n * sizeof(std::uint64_t)) / seconds_since(start) / 1e9);
  }
  if (sink == 42) std::printf(" ");
  return best;
}

struct matrix {
  shape s;
  std::vector<std::byte> bytes;
};

/// One pass over every matrix of a step: y = x W^T for n tokens, rows split over the team.
double step_seconds(const cpu_kernel_table& table, weight_type type, const std::vector<matrix>& matrices,
                    const std::vector<std::byte>& inputs, std::int64_t input_stride, int n, int threads,
                    std::vector<float>& y) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& m : matrices) {
    for (int c = 0; c < m.s.count; ++c) {
      const weight_view w{m.bytes.data(), inflight::row_bytes(type, m.s.cols), type};
      const int chunk = std::clamp((m.s.rows / (8 * threads) + 15) / 16 * 16, 16, 256);
      const int num_chunks = (m.s.rows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int i = 0; i < num_chunks; ++i) {
        typed_gemm(table, {inputs.data(), input_stride, w, y.data(), m.s.rows, n, m.s.cols, false}, i * chunk,
                   std::min(m.s.rows, (i + 1) * chunk));
      }
    }
  }
  return seconds_since(start);
}

void bench_type(const options& o, weight_type type, double bandwidth) {
  std::mt19937 rng(1);
  // One copy of each distinct shape, reused `count` times: decode streams the weights
  // from memory only if they do not fit in cache, so each shape holds distinct copies.
  std::vector<matrix> decode, prompt;
  std::int64_t decode_bytes = 0;
  for (const auto& s : layer_shapes) {
    for (int c = 0; c < s.count; ++c) decode.push_back({{s.rows, s.cols, 1}, random_matrix(type, s.rows, s.cols, rng)});
    prompt.push_back({s, random_matrix(type, s.rows, s.cols, rng)});
  }
  decode.push_back({classifier_shape, random_matrix(type, classifier_shape.rows, classifier_shape.cols, rng)});
  for (const auto& m : decode) decode_bytes += std::int64_t(m.bytes.size());
  const auto format = input_of(type);
  const int max_k = 2048, n = o.tokens;
  const std::int64_t stride = format == input_format::f32 ? 4 * max_k : prepared_row_bytes(format, max_k);
  std::vector<float> x(std::size_t(n) * max_k), y(std::size_t(n) * 32000);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  for (int i = 0; i < num_cpu_isas; ++i) {
    const auto isa = cpu_isa(i);
    if (!can_run(isa) || (!o.isa.empty() && o.isa != to_string(isa))) continue;
    const auto& table = kernels_for(isa);
    std::vector<std::byte> inputs(std::size_t(stride) * n);
    if (format == input_format::f32) {
      std::memcpy(inputs.data(), x.data(), x.size() * 4);
    } else {
      table.prepare[int(format)]({x.data(), max_k, n, max_k, 0, max_k, inputs.data(), stride});
    }
    double gemv = 1e30, gemm = 1e30;
    for (int r = 0; r < o.rounds; ++r) {
      gemv = std::min(gemv, step_seconds(table, type, decode, inputs, stride, 1, o.threads, y));
      gemm = std::min(gemm, step_seconds(table, type, prompt, inputs, stride, n, o.threads, y));
    }
    const double gbs = double(decode_bytes) / gemv / 1e9;
    std::printf("%-5s %-12s gemv %7.2f ms %6.1f GB/s (%3.0f%% of read bw) %7.1f steps/s | gemm %4d tokens %8.1f ms %7.1f tokens/s\n",
                to_string(type), to_string(isa), gemv * 1e3, gbs, 100.0 * gbs / bandwidth, 1.0 / gemv, n, gemm * 1e3,
                n / gemm);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The engine's OpenMP waiting (apps/inflight/main.cpp): spin ~0.1 ms at a barrier, then sleep.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    setenv("GOMP_SPINCOUNT", "10000", 0);
    execv("/proc/self/exe", argv);
  }
  const auto o = parse_options(argc, argv);
  print_header(o);
  if (!o.forward.empty()) return run_forward_bench(o);
  const double bandwidth = read_bandwidth(o.threads);
  std::printf("memory read bandwidth (%d threads, 1 GiB): %.1f GB/s\n", o.threads, bandwidth);
  for (int t = 0; t < num_weight_types; ++t) {
    if (!o.type.empty() && o.type != to_string(weight_type(t))) continue;
    bench_type(o, weight_type(t), bandwidth);
  }
  return 0;
}
