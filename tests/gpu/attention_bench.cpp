// Decode attention against its floor: the time of one decode attention call (split
// kernel + merge) for Llama-3.1-8B and Llama-3.2-1B head shapes, each kernel beside the
// time the device needs to read the step's K/V rows once at the copy bandwidth measured
// in the same run. Then prefill attention: each prefill kernel on whole prompts and on
// chunks deep in a context, with its rate in TFLOP/s (causal: the FLOPs of the keys each
// query attends). Not a test: prints figures.
//
//   inflight_gpu_attention_bench [repeats]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/decode_split.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/kernels.hpp"

namespace kc = inflight::kernels::cuda;

namespace {

void check(const kc::status& st) {
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.describe().c_str());
    std::exit(1);
  }
}

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(rc));
    std::exit(1);
  }
}

struct bench_case {
  std::string name;
  int num_heads, num_kv_heads, head_dim;
  std::vector<int> contexts;
};

/// Device memory bandwidth: bytes read plus bytes written per second by a 1 GiB copy
/// (best of 10).
double copy_bandwidth() {
  const std::size_t bytes = 1ull << 30;
  kc::device_buffer a, b;
  check(a.try_allocate(bytes));
  check(b.try_allocate(bytes));
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  check(cudaMemcpy(b.as(), a.as(), bytes, cudaMemcpyDeviceToDevice), "copy");
  float best = 1e30f;
  for (int i = 0; i < 10; ++i) {
    cudaEventRecord(start);
    cudaMemcpyAsync(b.as(), a.as(), bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), "copy");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * double(bytes) / (double(best) * 1e-3);
}

template <class F>
double median_us(int repeats, F&& launch) {
  for (int i = 0; i < 5; ++i) launch();  // warm-up
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), "kernel");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    times.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// One step's paged K/V cache (shuffled blocks), queries and batch on the device, zeros
/// throughout (for timing only): sequence s holds contexts[s] tokens, its last
/// queries[s] of them the step's query tokens.
struct device_batch {
  int num_tokens = 0, max_context = 0;
  std::int64_t total_context = 0;
  std::vector<std::int32_t> positions, query_start = {0};
  kc::device_buffer k, v, q, out, pos, qs, tables;
  kc::attention_args args;
};

void upload(kc::device_buffer& b, const std::vector<std::int32_t>& h) {
  check(b.try_allocate(h.size() * 4));
  check(cudaMemcpy(b.as(), h.data(), h.size() * 4, cudaMemcpyHostToDevice), "upload");
}

void make_batch(device_batch& d, int num_heads, int num_kv_heads, int head_dim, const std::vector<int>& contexts,
                const std::vector<int>& queries, std::mt19937& rng) {
  const int block_size = 16;
  const int num_seqs = int(contexts.size());
  d.max_context = *std::max_element(contexts.begin(), contexts.end());
  d.total_context = std::accumulate(contexts.begin(), contexts.end(), std::int64_t(0));
  const int stride = (d.max_context + block_size - 1) / block_size;
  const int num_blocks = stride * num_seqs;
  const std::int64_t kv_dim = std::int64_t(num_kv_heads) * head_dim;
  std::vector<std::int32_t> blocks(static_cast<std::size_t>(num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);  // row s = blocks [s*stride, (s+1)*stride)
  for (int s = 0; s < num_seqs; ++s) {
    const int ctx = contexts[std::size_t(s)], n = queries[std::size_t(s)];
    for (int p = ctx - n; p < ctx; ++p) d.positions.push_back(p);
    d.query_start.push_back(d.query_start.back() + n);
  }
  d.num_tokens = d.query_start.back();
  const std::size_t cache_elems = std::size_t(num_blocks) * block_size * std::size_t(kv_dim);
  const std::size_t q_elems = std::size_t(d.num_tokens) * num_heads * head_dim;
  check(d.k.try_allocate(cache_elems * 2));
  check(d.v.try_allocate(cache_elems * 2));
  check(d.q.try_allocate(q_elems * 2));
  check(d.out.try_allocate(q_elems * 2));
  check(cudaMemset(d.k.as(), 0, d.k.bytes()), "memset");
  check(cudaMemset(d.v.as(), 0, d.v.bytes()), "memset");
  check(cudaMemset(d.q.as(), 0, d.q.bytes()), "memset");
  upload(d.pos, d.positions);
  upload(d.qs, d.query_start);
  upload(d.tables, blocks);
  kc::attention_args& a = d.args;
  a.dt = kc::dtype::bf16;
  a.out = d.out.as();
  a.q = d.q.as();
  a.q_stride = num_heads * head_dim;
  a.k_cache = d.k.as();
  a.v_cache = d.v.as();
  a.positions = d.pos.as<std::int32_t>();
  a.query_start = d.qs.as<std::int32_t>();
  a.block_tables = d.tables.as<std::int32_t>();
  a.block_table_stride = stride;
  a.num_tokens = d.num_tokens;
  a.num_seqs = num_seqs;
  a.block_size = block_size;
  a.num_heads = num_heads;
  a.num_kv_heads = num_kv_heads;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(float(head_dim));
}

struct prefill_case {
  std::string name;
  int num_heads, num_kv_heads, head_dim;
  std::vector<int> contexts, queries;  ///< per sequence: tokens after the step, query tokens (its last ones)
};

void bench_prefill(int repeats, std::mt19937& rng) {
  const std::vector<prefill_case> cases = {
      {"8B prompt 1 x 1750", 32, 8, 128, {1750}, {1750}},
      {"8B chunk 512 @ 2000", 32, 8, 128, {2000}, {512}},
      {"8B 4 x 2000 prompts", 32, 8, 128, {2000, 2000, 2000, 2000}, {2000, 2000, 2000, 2000}},
      {"1B prompt 1 x 1750", 32, 8, 64, {1750}, {1750}},
      {"1B chunk 512 @ 4000", 32, 8, 64, {4000}, {512}},
  };
  std::printf("\n%-22s %-8s %10s %10s\n", "prefill case", "kernel", "us", "TFLOP/s");
  for (const auto& c : cases) {
    device_batch d;
    make_batch(d, c.num_heads, c.num_kv_heads, c.head_dim, c.contexts, c.queries, rng);
    std::vector<std::int32_t> tiles;
    double flops = 0;
    for (int s = 0; s < int(c.contexts.size()); ++s) {
      const int first = d.query_start[std::size_t(s)], end = d.query_start[std::size_t(s) + 1];
      for (int t = first; t < end; ++t) flops += 4.0 * double(d.positions[std::size_t(t)] + 1) * c.head_dim * c.num_heads;
      for (int t = first; t < end; t += kc::prefill_tile_tokens) {
        tiles.insert(tiles.end(), {s, t, std::min(t + kc::prefill_tile_tokens, end)});
      }
    }
    kc::device_buffer d_tiles;
    upload(d_tiles, tiles);
    const int num_tiles = int(tiles.size() / 3);
    for (const auto pk : {kc::prefill_kernel::tiled, kc::prefill_kernel::mma}) {
      const double us =
          median_us(repeats, [&] { check(kc::attention_prefill(d.args, d_tiles.as<std::int32_t>(), num_tiles, nullptr, pk)); });
      std::printf("%-22s %-8s %10.1f %10.1f\n", c.name.c_str(), pk == kc::prefill_kernel::mma ? "mma" : "tiled", us,
                  flops / (us * 1e-6) / 1e12);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
  int num_sms = 0;
  check(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0), "no CUDA device");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device properties");
  const double bandwidth = copy_bandwidth();
  std::printf("device: %s, %d SMs, copy bandwidth %.0f GB/s (read + write)\n", prop.name, num_sms, bandwidth / 1e9);

  std::mt19937 rng(7);
  std::vector<bench_case> cases = {
      {"8B 1 x 2000", 32, 8, 128, std::vector<int>(1, 2000)},
      {"8B 16 x 2000", 32, 8, 128, std::vector<int>(16, 2000)},
      {"8B 64 x 2000", 32, 8, 128, std::vector<int>(64, 2000)},
      {"8B 1 x 8000", 32, 8, 128, std::vector<int>(1, 8000)},
      {"8B 1 x 32000", 32, 8, 128, std::vector<int>(1, 32000)},
      {"1B 256 x 200..1300", 32, 8, 64, {}},
      {"1B 64 x 2000", 32, 8, 64, std::vector<int>(64, 2000)},
  };
  for (int s = 0; s < 256; ++s) cases[5].contexts.push_back(200 + int(rng() % 1100));

  std::printf("%-20s %-24s %8s %8s %10s %8s\n", "case", "kernel", "splits", "us", "floor us", "x floor");
  for (const auto& c : cases) {
    device_batch d;
    make_batch(d, c.num_heads, c.num_kv_heads, c.head_dim, c.contexts, std::vector<int>(c.contexts.size(), 1), rng);
    const int num_seqs = int(c.contexts.size()), max_ctx = d.max_context;
    const std::int64_t total = d.total_context, kv_dim = std::int64_t(c.num_kv_heads) * c.head_dim;
    kc::device_buffer part_buf;
    // The K and V rows of every context, read once at the rate the device moves bytes.
    const double floor_us = double(total) * double(kv_dim) * 2 * 2 / bandwidth * 1e6;

    struct variant {
      const char* name;
      kc::decode_kernel kernel;
      bool planned;  // the per-step plan; else the former fixed plan: 16 splits of a model's 8,192 positions
    };
    for (const variant var : {variant{"per_head, fixed splits", kc::decode_kernel::per_head, false},
                              variant{"per_head, planned splits", kc::decode_kernel::per_head, true},
                              variant{"grouped, planned splits", kc::decode_kernel::grouped, true},
                              variant{"mma, planned splits", kc::decode_kernel::mma, true}}) {
      int num_splits = 16, split_size = (std::max(8192, max_ctx) + 15) / 16;
      if (var.planned) {
        num_splits = kc::decode_grid_splits(num_seqs, c.num_kv_heads, num_sms);
        split_size = kc::decode_split_size(total, max_ctx, c.num_kv_heads, num_sms, num_splits);
      }
      check(part_buf.try_allocate(
          std::size_t(kc::decode_partials_floats(num_seqs, c.num_heads, c.head_dim, num_splits)) * 4));
      kc::decode_partials part = kc::decode_partials_at(part_buf.as<float>(), num_seqs, c.num_heads, c.head_dim, num_splits);
      part.split_size = split_size;
      const double us = median_us(repeats, [&] { check(kc::attention_decode(d.args, part, nullptr, var.kernel)); });
      const int used = (max_ctx + part.split_size - 1) / part.split_size;
      std::printf("%-20s %-24s %8d %8.1f %10.1f %8.2f\n", c.name.c_str(), var.name, used, us, floor_us, us / floor_us);
    }
  }
  bench_prefill(std::max(3, repeats / 5), rng);
  return 0;
}
