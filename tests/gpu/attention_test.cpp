// Paged attention kernels (decode split-K and prefill tiles) against the CPU's
// paged_attention over random ragged batches: odd block sizes, GQA 1/4/8, long contexts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/llama.hpp"
#include "kernels/cuda/decode_split.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace inflight;
using namespace inflight::test::gpu;

namespace {

struct attention_case {
  int block_size, num_heads, num_kv_heads, head_dim;
  std::vector<int> contexts;  ///< tokens per sequence after this step
  std::vector<int> queries;   ///< query tokens per sequence (the last ones of its context)
};

struct ragged {
  std::vector<std::int32_t> positions, query_start, block_tables, tiles;
  int stride = 0, num_blocks = 0, num_tokens = 0;
};

ragged make_batch(const attention_case& c, std::mt19937& rng) {
  ragged r;
  r.query_start.push_back(0);
  for (const int ctx : c.contexts) r.stride = std::max(r.stride, (ctx + c.block_size - 1) / c.block_size);
  r.num_blocks = r.stride * int(c.contexts.size()) + 3;
  std::vector<std::int32_t> blocks(std::size_t(r.num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);  // tables point anywhere in the cache
  r.block_tables.assign(c.contexts.size() * std::size_t(r.stride), 0);
  std::size_t next = 0;
  for (std::size_t s = 0; s < c.contexts.size(); ++s) {
    for (int i = 0; i < (c.contexts[s] + c.block_size - 1) / c.block_size; ++i) {
      r.block_tables[s * std::size_t(r.stride) + std::size_t(i)] = blocks[next++];
    }
    const int first = r.query_start.back();
    for (int p = c.contexts[s] - c.queries[s]; p < c.contexts[s]; ++p) r.positions.push_back(p);
    r.query_start.push_back(first + c.queries[s]);
    for (int t = first; t < r.query_start.back(); t += kc::prefill_tile_tokens) {
      r.tiles.insert(r.tiles.end(), {std::int32_t(s), t, std::min(t + kc::prefill_tile_tokens, r.query_start.back())});
    }
  }
  r.num_tokens = r.query_start.back();
  return r;
}

const char* decode_name(kc::decode_kernel k) {
  return k == kc::decode_kernel::grouped ? "grouped" : k == kc::decode_kernel::per_head ? "per_head" : "mma";
}

/// Runs the case through the CPU, the prefill kernel and (all queries of 1) the decode kernel.
void check_case(const attention_case& c, kc::dtype dt, std::mt19937& rng, int split_size = 0) {
  const auto r = make_batch(c, rng);
  const int qd = c.num_heads * c.head_dim, kvd = c.num_kv_heads * c.head_dim;
  const auto q = rounded(random_floats(std::size_t(r.num_tokens) * qd, rng), dt);
  const auto k_cache = rounded(random_floats(std::size_t(r.num_blocks) * c.block_size * kvd, rng), dt);
  const auto v_cache = rounded(random_floats(k_cache.size(), rng), dt);
  kernels::cpu::ragged_batch_view b;
  b.num_tokens = r.num_tokens;
  b.positions = r.positions.data();
  b.num_seqs = int(c.contexts.size());
  b.query_start = r.query_start.data();
  b.block_tables = r.block_tables.data();
  b.block_table_stride = r.stride;
  std::vector<float> want(std::size_t(r.num_tokens) * qd);
  kernels::cpu::paged_attention(want.data(), q.data(), k_cache.data(), v_cache.data(), b, c.block_size, c.num_heads,
                                c.num_kv_heads, c.head_dim);

  auto d_q = upload(q, dt), d_k = upload(k_cache, dt), d_v = upload(v_cache, dt);
  auto d_pos = upload_i32(r.positions), d_qs = upload_i32(r.query_start), d_tables = upload_i32(r.block_tables);
  auto d_tiles = upload_i32(r.tiles);
  kc::device_buffer d_out;
  require_ok(d_out.try_allocate(want.size() * 2));
  kc::attention_args a;
  a.dt = dt;
  a.out = d_out.as();
  a.q = d_q.as();
  a.q_stride = qd;
  a.k_cache = d_k.as();
  a.v_cache = d_v.as();
  a.positions = d_pos.as<std::int32_t>();
  a.query_start = d_qs.as<std::int32_t>();
  a.block_tables = d_tables.as<std::int32_t>();
  a.block_table_stride = r.stride;
  a.num_tokens = r.num_tokens;
  a.num_seqs = int(c.contexts.size());
  a.block_size = c.block_size;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(float(c.head_dim));
  // Every decode kernel; the tensor-core one where it takes the head shape.
  std::vector<kc::decode_kernel> decode_kernels = {kc::decode_kernel::grouped, kc::decode_kernel::per_head};
  if (kc::attention_decode_mma_supports(a)) decode_kernels.push_back(kc::decode_kernel::mma);
  // Both prefill kernels; the tensor-core one where it takes the head shape.
  std::vector<kc::prefill_kernel> prefill_kernels = {kc::prefill_kernel::tiled};
  if (kc::attention_prefill_mma_supports(a)) prefill_kernels.push_back(kc::prefill_kernel::mma);
  for (const auto pk : prefill_kernels) {
    REQUIRE(cudaMemset(d_out.as(), 0xff, d_out.bytes()) == cudaSuccess);  // NaNs where nothing is written
    require_ok(kc::attention_prefill(a, d_tiles.as<std::int32_t>(), int(r.tiles.size() / 3), nullptr, pk));
    INFO("prefill kernel " << (pk == kc::prefill_kernel::mma ? "mma" : "tiled"));
    require_close(download(d_out, want.size(), dt), want, tolerance(dt));
  }
  const bool all_decode = std::all_of(c.queries.begin(), c.queries.end(), [](int n) { return n == 1; });
  if (!all_decode) {
    // As the runner splits a mixed step: the one-token sequences through the decode
    // kernel (decode_seqs), the tiles of the others through the prefill kernel.
    std::vector<std::int32_t> multi_tiles, decode_seqs;
    for (std::size_t i = 0; i < r.tiles.size(); i += 3) {
      if (c.queries[std::size_t(r.tiles[i])] > 1) multi_tiles.insert(multi_tiles.end(), r.tiles.begin() + i, r.tiles.begin() + i + 3);
    }
    for (std::size_t s = 0; s < c.queries.size(); ++s) {
      if (c.queries[s] == 1) decode_seqs.push_back(std::int32_t(s));
    }
    if (decode_seqs.empty()) return;
    auto d_multi = upload_i32(multi_tiles), d_decode = upload_i32(decode_seqs);
    const int max_ctx = *std::max_element(c.contexts.begin(), c.contexts.end());
    const int rows_n = int(decode_seqs.size()), num_splits = (max_ctx + 63) / 64;
    kc::device_buffer d_part;
    require_ok(d_part.try_allocate(std::size_t(kc::decode_partials_floats(rows_n, c.num_heads, c.head_dim, num_splits)) * 4));
    kc::decode_partials part = kc::decode_partials_at(d_part.as<float>(), rows_n, c.num_heads, c.head_dim, num_splits);
    part.split_size = 64;
    kc::attention_args ad = a;
    ad.num_seqs = rows_n;
    ad.decode_seqs = d_decode.as<std::int32_t>();
    for (const auto pk : prefill_kernels) {
      for (const auto kernel : decode_kernels) {
        REQUIRE(cudaMemset(d_out.as(), 0xff, d_out.bytes()) == cudaSuccess);
        require_ok(kc::attention_prefill(a, d_multi.as<std::int32_t>(), int(multi_tiles.size() / 3), nullptr, pk));
        require_ok(kc::attention_decode(ad, part, nullptr, kernel));
        INFO("mixed step: prefill tiles (" << (pk == kc::prefill_kernel::mma ? "mma" : "tiled") << ") + decode rows ("
                                            << decode_name(kernel) << ")");
        require_close(download(d_out, want.size(), dt), want, tolerance(dt));
      }
    }
    return;
  }
  const int max_ctx = *std::max_element(c.contexts.begin(), c.contexts.end());
  const int size = split_size > 0 ? split_size : 512;
  const int num_splits = (max_ctx + size - 1) / size + 1;  // one more than needed: must be skipped
  kc::device_buffer d_part;
  const auto floats = kc::decode_partials_floats(a.num_seqs, c.num_heads, c.head_dim, num_splits);
  require_ok(d_part.try_allocate(std::size_t(floats) * 4));
  kc::decode_partials part = kc::decode_partials_at(d_part.as<float>(), a.num_seqs, c.num_heads, c.head_dim, num_splits);
  part.split_size = size;
  // The split size read from the device (as a replayed graph does): a host value that
  // would cut the contexts wrongly must be ignored.
  auto d_split = upload_i32({part.split_size});
  for (const auto kernel : decode_kernels) {
    for (const bool from_device : {false, true}) {
      kc::decode_partials p = part;
      if (from_device) {
        p.split_size_dev = d_split.as<std::int32_t>();
        p.split_size = 1;
      }
      REQUIRE(cudaMemset(d_out.as(), 0, d_out.bytes()) == cudaSuccess);
      require_ok(kc::attention_decode(a, p, nullptr, kernel));
      INFO("decode kernel " << decode_name(kernel) << ", split size "
                            << part.split_size << (from_device ? " (from the device)" : ""));
      require_close(download(d_out, want.size(), dt), want, tolerance(dt));
    }
  }
}

}  // namespace

TEST_CASE("decode attention matches the CPU over GQA ratios, block sizes and splits", "[gpu]") {
  require_device();
  std::mt19937 rng(11);
  for (const auto dt : {kc::dtype::bf16, kc::dtype::f16}) {
    // Groups past 8 take several blocks per kv head; 3 and 6 leave heads of a block unused.
    for (const int group : {1, 2, 3, 4, 6, 8, 16}) {
      for (const int head_dim : {64, 128, 80, 256, 6}) {
        for (const int block_size : {16, 5, 32}) {
          DYNAMIC_SECTION(name_of(dt) << " group " << group << " head_dim " << head_dim << " block " << block_size) {
            attention_case c{block_size, 2 * group, 2, head_dim, {}, {}};
            for (int s = 0; s < 7; ++s) {
              c.contexts.push_back(1 + int(rng() % 700));
              c.queries.push_back(1);
            }
            c.contexts[0] = 1;                 // a first token: one key
            c.contexts[1] = block_size;        // exactly one full block
            check_case(c, dt, rng, 0);
            check_case(c, dt, rng, 37);        // many splits, partial warps
          }
        }
      }
    }
  }
}

TEST_CASE("decode attention over 8k contexts", "[gpu]") {
  require_device();
  std::mt19937 rng(12);
  attention_case c{16, 32, 8, 128, {8192, 8191, 4097, 1}, {1, 1, 1, 1}};
  check_case(c, kc::dtype::bf16, rng, 512);
  check_case(c, kc::dtype::bf16, rng, 8192);  // one split: no merge across splits
  check_case(c, kc::dtype::bf16, rng, 64);    // 128 splits of the smallest size
}

TEST_CASE("decode attention with the runner's split plan for 1 to 256 sequences", "[gpu]") {
  require_device();
  int num_sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  std::mt19937 rng(15);
  for (const int num_seqs : {1, 3, 64, 256}) {
    DYNAMIC_SECTION(num_seqs << " sequences") {
      attention_case c{16, 32, 8, 128, {}, {}};
      std::int64_t total = 0;
      for (int s = 0; s < num_seqs; ++s) {
        c.contexts.push_back(1 + int(rng() % (num_seqs == 1 ? 6000 : 900)));
        c.queries.push_back(1);
        total += c.contexts.back();
      }
      const int max_ctx = *std::max_element(c.contexts.begin(), c.contexts.end());
      const int grid = kc::decode_grid_splits(num_seqs, c.num_kv_heads, num_sms);
      const int size = kc::decode_split_size(total, max_ctx, c.num_kv_heads, num_sms, grid);
      INFO("grid splits " << grid << ", split size " << size);
      REQUIRE(std::int64_t(grid) * size >= max_ctx);
      check_case(c, kc::dtype::bf16, rng, size);
    }
  }
}

TEST_CASE("prefill attention matches the CPU over ragged chunks", "[gpu]") {
  require_device();
  std::mt19937 rng(13);
  for (const auto dt : {kc::dtype::bf16, kc::dtype::f16}) {
    for (const int group : {1, 2, 4, 7, 8}) {
      for (const int head_dim : {64, 128, 96, 256}) {
        for (const int block_size : {16, 7}) {
          DYNAMIC_SECTION(name_of(dt) << " group " << group << " head_dim " << head_dim << " block " << block_size) {
            attention_case c{block_size, group, 1, head_dim, {}, {}};
            // A fresh prompt, a later chunk, decodes and odd chunk sizes, all in one batch.
            c.contexts = {1, 17, 33, 300, 129, 64, 5};
            c.queries = {1, 17, 31, 45, 1, 16, 3};
            check_case(c, dt, rng);
          }
        }
      }
    }
  }
}

TEST_CASE("prefill attention: a chunk deep into an 8k context", "[gpu]") {
  require_device();
  std::mt19937 rng(14);
  attention_case c{16, 32, 8, 128, {8192, 2000}, {61, 200}};
  check_case(c, kc::dtype::bf16, rng);
}

TEST_CASE("prefill attention: several kv heads, a group of 7 (Qwen2.5-0.5B) and whole prompts", "[gpu]") {
  require_device();
  std::mt19937 rng(15);
  // 14 query heads over 2 kv heads (the tensor-core kernel's second block of a group
  // has an idle warp), then the 8B shape with 1,000- and 65-token prompts from position 0.
  attention_case qwen{16, 14, 2, 64, {70, 300, 1}, {70, 129, 1}};
  check_case(qwen, kc::dtype::bf16, rng);
  attention_case llama{16, 32, 8, 128, {1000, 65, 40}, {1000, 65, 1}};
  check_case(llama, kc::dtype::bf16, rng);
  check_case(llama, kc::dtype::f16, rng);
}
