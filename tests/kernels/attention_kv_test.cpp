// Attention over f32, f16 and bf16 KV caches: the narrow types against f32 attention on
// the converted values, several queries at once against each alone, and the conversions
// written into the cache.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"
#include "tests/kernels/quant_test_util.hpp"

using namespace inflight::kernels::cpu;
using inflight::test::random_floats;
using inflight::test::runnable_isas;

namespace {

/// A paged KV cache of one layer in one element type, filled through a table's store_kv.
struct kv_cache {
  kv_type type;
  int block_size, num_blocks, kv_dim;
  std::vector<std::byte> k, v;

  kv_cache(const cpu_kernel_table& table, kv_type t, int bs, int nb, int dim, const std::vector<float>& kf,
           const std::vector<float>& vf)
      : type(t), block_size(bs), num_blocks(nb), kv_dim(dim) {
    const std::int64_t row = std::int64_t(dim) * element_bytes(t), slots = std::int64_t(bs) * nb;
    k.resize(std::size_t(row * slots));
    v.resize(k.size());
    for (std::int64_t s = 0; s < slots; ++s) {
      table.store_kv[int(t)](k.data() + s * row, kf.data() + s * dim, dim);
      table.store_kv[int(t)](v.data() + s * row, vf.data() + s * dim, dim);
    }
  }
  /// The cache's values as floats (exact: every narrow value is a float).
  std::vector<float> floats(const std::vector<std::byte>& cache) const {
    std::vector<float> out(cache.size() / std::size_t(element_bytes(type)));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (type == kv_type::f32) {
        std::memcpy(&out[i], cache.data() + 4 * i, 4);
        continue;
      }
      std::uint16_t h;
      std::memcpy(&h, cache.data() + 2 * i, 2);
      out[i] = type == kv_type::f16 ? fp16_to_float(h) : bf16_to_float(h);
    }
    return out;
  }
};

struct query_batch {
  std::vector<float> q, out, scores;
  attention_args a;

  query_batch(const std::vector<float>& queries, int head_dim, int first, int count, int num_keys,
              const std::vector<std::int32_t>& table, int block_size, int window = 0, float softcap = 0.0f,
              float sink = -INFINITY)
      : q(queries.begin() + std::ptrdiff_t(first) * head_dim, queries.begin() + std::ptrdiff_t(first + count) * head_dim),
        out(std::size_t(count) * head_dim, NAN),
        scores(std::size_t(attention_tile) * (num_keys + first + count), NAN) {
    a.q = q.data();
    a.q_stride = a.out_stride = head_dim;
    a.num_queries = count;
    a.block_table = table.data();
    a.block_size = block_size;
    a.num_keys = num_keys + first;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(float(head_dim));
    a.window = window;
    a.softcap = softcap;
    a.sink = sink;
    a.scores = scores.data();
    a.out = out.data();
  }
  /// Over the second KV head's region of caches [kv heads][blocks][block_size][head_dim].
  void run(const cpu_kernel_table& table, kv_type type, const std::byte* k, const std::byte* v) {
    const std::int64_t region = std::int64_t(16) * 16 * a.head_dim * element_bytes(type);  // 16 blocks of 16
    a.type = type;
    a.k_cache = k + region;
    a.v_cache = v + region;
    table.attention(a);
  }
};

const std::vector<std::int32_t> shuffled_blocks = {9, 2, 14, 0, 7, 11, 3, 5, 1, 12, 4, 6, 8, 10, 13, 15};

}  // namespace

TEST_CASE("attention over several queries gives each query's bits alone, across blocks and tiles",
          "[kernels][attention]") {
  std::mt19937 rng(31);
  for (auto isa : runnable_isas()) {
    const auto& table = kernels_for(isa);
    for (int head_dim : {8, 64, 72}) {
      for (auto type : {kv_type::f32, kv_type::f16, kv_type::bf16}) {
        const int bs = 16, nb = 16, kv_dim = 2 * head_dim;
        const kv_cache c(table, type, bs, nb, kv_dim, random_floats(std::size_t(bs) * nb * kv_dim, rng),
                         random_floats(std::size_t(bs) * nb * kv_dim, rng));
        // Windows narrower than the tile, as wide, wider, and none; soft-capped or not.
        for (auto [num_keys, window, softcap] : {std::tuple{1, 0, 0.0f}, {3, 0, 0.0f}, {13, 0, 0.0f}, {15, 0, 0.0f},
                                                 {16, 0, 0.0f}, {29, 0, 0.0f}, {31, 0, 0.0f}, {60, 0, 0.0f},
                                                 {29, 2, 0.0f}, {29, 4, 0.0f}, {31, 5, 0.5f}, {60, 17, 0.0f},
                                                 {3, 5, 0.0f}, {60, 0, 0.5f}}) {
          const int n = 9;
          const auto queries = random_floats(std::size_t(n) * head_dim, rng, 0.7f);
          const float sink = window == 5 ? 1.5f : -INFINITY;  // gpt-oss's sinks on one of the cases
          query_batch all(queries, head_dim, 0, n, num_keys, shuffled_blocks, bs, window, softcap, sink);
          all.run(table, type, c.k.data(), c.v.data());
          for (int i = 0; i < n; ++i) {
            query_batch one(queries, head_dim, i, 1, num_keys, shuffled_blocks, bs, window, softcap, sink);
            one.run(table, type, c.k.data(), c.v.data());
            INFO(to_string(isa) << " " << to_string(type) << " head_dim " << head_dim << " keys " << num_keys
                                << " window " << window << " softcap " << softcap << " query " << i);
            REQUIRE(std::memcmp(one.out.data(), all.out.data() + std::size_t(i) * head_dim, one.out.size() * 4) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("f16 and bf16 KV attention equals f32 attention over the converted values, bit for bit",
          "[kernels][attention]") {
  std::mt19937 rng(37);
  for (auto isa : runnable_isas()) {
    const auto& table = kernels_for(isa);
    for (auto type : {kv_type::f16, kv_type::bf16}) {
      const int head_dim = 64, bs = 16, nb = 16, kv_dim = 2 * head_dim;
      const kv_cache narrow(table, type, bs, nb, kv_dim, random_floats(std::size_t(bs) * nb * kv_dim, rng),
                            random_floats(std::size_t(bs) * nb * kv_dim, rng));
      const auto kf = narrow.floats(narrow.k), vf = narrow.floats(narrow.v);
      const auto queries = random_floats(std::size_t(5) * head_dim, rng);
      query_batch got(queries, head_dim, 0, 5, 100, shuffled_blocks, bs);
      got.run(table, type, narrow.k.data(), narrow.v.data());
      query_batch want(queries, head_dim, 0, 5, 100, shuffled_blocks, bs);
      want.run(table, kv_type::f32, reinterpret_cast<const std::byte*>(kf.data()),
               reinterpret_cast<const std::byte*>(vf.data()));
      INFO(to_string(isa) << " " << to_string(type));
      CHECK(std::memcmp(got.out.data(), want.out.data(), got.out.size() * 4) == 0);
    }
  }
}

TEST_CASE("KV rows are written as the scalar conversions round them, tails and special values included",
          "[kernels][attention]") {
  std::mt19937 rng(41);
  auto x = random_floats(45, rng, 100.0f);
  x[0] = 65520.0f, x[1] = -1e-7f, x[2] = 1.0f + 0x1p-11f, x[3] = INFINITY, x[4] = 1e-42f, x[5] = 1.0f + 0x1p-8f;
  x[44] = 3.0e38f;
  for (auto isa : runnable_isas()) {
    for (auto type : {kv_type::f16, kv_type::bf16}) {
      std::vector<std::uint16_t> got(x.size());
      kernels_for(isa).store_kv[int(type)](reinterpret_cast<std::byte*>(got.data()), x.data(), int(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) {
        INFO(to_string(isa) << " " << to_string(type) << " " << x[i]);
        CHECK(got[i] == (type == kv_type::f16 ? float_to_fp16(x[i]) : float_to_bf16(x[i])));
      }
    }
  }
}
