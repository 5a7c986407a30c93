// The decode split plan of the CUDA runner (kernels/cuda/decode_split.hpp) and the CPU
// twin of the split decode + merge (kernels/cpu/twins.hpp) against paged attention.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/llama.hpp"
#include "kernels/cpu/twins.hpp"
#include "kernels/cuda/decode_split.hpp"

namespace kc = inflight::kernels::cuda;
namespace cpu = inflight::kernels::cpu;

TEST_CASE("decode split plan: covers every context in the grid's splits, in whole warps", "[kernels]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 5000; ++trial) {
    const int num_seqs = 1 + int(rng() % 1024);
    const int kv_heads = std::array{1, 2, 4, 8}[rng() % 4];
    const int sms = std::array{1, 78, 114, 132, 144}[rng() % 5];
    const int max_ctx = 1 + int(rng() % 131072);
    const std::int64_t total = max_ctx + std::int64_t(rng() % 1000) * (num_seqs - 1);
    const int grid = kc::decode_grid_splits(num_seqs, kv_heads, sms);
    const int size = kc::decode_split_size(total, max_ctx, kv_heads, sms, grid);
    INFO(num_seqs << " seqs, " << kv_heads << " kv heads, " << sms << " SMs, max context " << max_ctx);
    REQUIRE(grid >= 4);
    REQUIRE(grid <= kc::max_decode_splits);
    REQUIRE(size >= kc::min_decode_split);
    REQUIRE(size % kc::decode_split_granule == 0);
    REQUIRE(std::int64_t(grid) * size >= max_ctx);
  }
}

TEST_CASE("decode split plan: cut from the step's contexts, not the model's", "[kernels]") {
  // One 2,000-token stream of an 8B shape (8 kv heads) on 132 SMs: enough splits to
  // give every SM a block, whatever the model's maximum context.
  const int grid1 = kc::decode_grid_splits(1, 8, 132);
  const int size1 = kc::decode_split_size(2000, 2000, 8, 132, grid1);
  CHECK((2000 + size1 - 1) / size1 * 8 >= 132);
  // The same stream at 100 tokens: smallest splits, the context alone decides.
  CHECK(kc::decode_split_size(100, 100, 8, 132, grid1) == kc::min_decode_split);
  // 256 streams of 1,000 tokens already fill the device: one split each.
  const int grid256 = kc::decode_grid_splits(256, 8, 132);
  CHECK(kc::decode_split_size(256 * 1000, 1000, 8, 132, grid256) >= 1000);
  // One 8,000-token stream among 255 short ones is still cut.
  CHECK(kc::decode_split_size(8000 + 255 * 100, 8000, 8, 132, grid256) < 8000);
  // 131,072 positions in one stream: split size set by the grid's splits.
  CHECK(kc::decode_split_size(131072, 131072, 8, 132, grid1) * grid1 >= 131072);
}

TEST_CASE("split decode with its merge equals paged attention", "[kernels]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const int group : {1, 4}) {
    for (const int split_size : {37, 64, 96, 5000}) {
      DYNAMIC_SECTION("group " << group << " split size " << split_size) {
        const int block_size = 16, kv_heads = 2, heads = kv_heads * group, hd = 16;
        const std::vector<int> contexts = {1, 16, 37, 300, 129, 700};
        const int num_seqs = int(contexts.size());
        int stride = 0;
        for (const int c : contexts) stride = std::max(stride, (c + block_size - 1) / block_size);
        const int num_blocks = stride * num_seqs;
        std::vector<std::int32_t> blocks(static_cast<std::size_t>(num_blocks)), tables(static_cast<std::size_t>(num_blocks), 0);
        std::iota(blocks.begin(), blocks.end(), 0);
        std::shuffle(blocks.begin(), blocks.end(), rng);
        std::vector<std::int32_t> positions, query_start = {0};
        std::size_t next = 0;
        for (int s = 0; s < num_seqs; ++s) {
          for (int i = 0; i < (contexts[std::size_t(s)] + block_size - 1) / block_size; ++i) {
            tables[std::size_t(s * stride + i)] = blocks[next++];
          }
          positions.push_back(contexts[std::size_t(s)] - 1);
          query_start.push_back(s + 1);
        }
        const std::int64_t kv_dim = std::int64_t(kv_heads) * hd;
        std::vector<float> q(std::size_t(num_seqs * heads * hd)), k(std::size_t(num_blocks * block_size * kv_dim));
        std::vector<float> v(k.size());
        for (auto* vec : {&q, &k, &v}) {
          for (auto& x : *vec) x = dist(rng);
        }
        cpu::ragged_batch_view b;
        b.num_tokens = num_seqs;
        b.positions = positions.data();
        b.num_seqs = num_seqs;
        b.query_start = query_start.data();
        b.block_tables = tables.data();
        b.block_table_stride = stride;
        std::vector<float> want(q.size()), got(q.size(), NAN);
        cpu::paged_attention(want.data(), q.data(), k.data(), v.data(), b, block_size, heads, kv_heads, hd);
        cpu::decode_attention_split(got.data(), q.data(), k.data(), v.data(), positions.data(), query_start.data(),
                                    tables.data(), stride, num_seqs, block_size, heads, kv_heads, hd, split_size);
        for (std::size_t i = 0; i < want.size(); ++i) {
          INFO("element " << i);
          REQUIRE(got[i] == Approx(want[i]).margin(1e-5).epsilon(1e-4));
        }
      }
    }
  }
}
