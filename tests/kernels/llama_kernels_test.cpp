// CPU kernels on small exact cases and against naive formulas.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <random>

#include "kernels/cpu/llama.hpp"

using namespace inflight::kernels::cpu;

TEST_CASE("rmsnorm on an exact row", "[kernels]") {
  const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
  float out[4];
  rmsnorm(out, x, w, 1, 4, 0.0f);
  const float inv = 1.0f / std::sqrt(30.0f / 4.0f);
  CHECK(out[0] == Approx(1 * inv));
  CHECK(out[2] == Approx(2 * 3 * inv));
  CHECK(out[3] == Approx(0.5f * 4 * inv));
}

TEST_CASE("rope frequencies: plain theta, and Llama-3 scaling by wavelength band", "[kernels]") {
  llama_shape s;
  s.head_dim = 128;
  s.rope_theta = 500000.0f;
  CHECK(rope_inv_freq(0, s) == Approx(1.0f));
  CHECK(rope_inv_freq(32, s) == Approx(std::pow(500000.0f, -0.5f)));
  auto scaled = s;
  scaled.rope_scaling = rope_scaling_kind::llama3;
  scaled.rope_factor = 8.0f;
  scaled.rope_low_freq_factor = 1.0f;
  scaled.rope_high_freq_factor = 4.0f;
  scaled.rope_original_max_position = 8192;
  // Short wavelengths (high frequencies) are kept, long ones slowed by the factor.
  CHECK(rope_inv_freq(0, scaled) == Approx(rope_inv_freq(0, s)));
  CHECK(rope_inv_freq(63, scaled) == Approx(rope_inv_freq(63, s) / 8.0f));
  // In the band between, the result lies between the two.
  for (int j = 0; j < 64; ++j) {
    const float f = rope_inv_freq(j, s), g = rope_inv_freq(j, scaled);
    CHECK(g <= f * 1.0001f);
    CHECK(g >= f / 8.0f * 0.9999f);
  }
}

TEST_CASE("rope: interleaved and half layouts are the same rotation up to a permutation", "[kernels]") {
  llama_shape s;
  s.num_heads = 1;
  s.num_kv_heads = 1;
  s.head_dim = 8;
  std::vector<float> q(8), k(8);
  std::iota(q.begin(), q.end(), 1.0f);
  std::iota(k.begin(), k.end(), 10.0f);
  // half layout holds pair j at (j, j+4); interleaved at (2j, 2j+1)
  std::vector<float> qh(8), kh(8);
  for (int j = 0; j < 4; ++j) {
    qh[j] = q[2 * j], qh[j + 4] = q[2 * j + 1];
    kh[j] = k[2 * j], kh[j + 4] = k[2 * j + 1];
  }
  const std::int32_t pos = 7;
  rope(q.data(), k.data(), &pos, 1, s);
  s.rope_interleaved = false;
  rope(qh.data(), kh.data(), &pos, 1, s);
  for (int j = 0; j < 4; ++j) {
    CHECK(qh[j] == Approx(q[2 * j]));
    CHECK(qh[j + 4] == Approx(q[2 * j + 1]));
    CHECK(kh[j + 4] == Approx(k[2 * j + 1]));
  }
}

TEST_CASE("paged attention through a shuffled block table equals naive causal attention", "[kernels]") {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int group : {1, 4}) {
    const int num_kv_heads = 2, num_heads = num_kv_heads * group, head_dim = 8, block_size = 4, len = 11;
    const int kv_dim = num_kv_heads * head_dim, num_blocks = 6;
    std::vector<float> q(len * num_heads * head_dim), keys(len * kv_dim), values(len * kv_dim);
    for (auto* v : {&q, &keys, &values}) for (auto& x : *v) x = normal(rng);
    const std::vector<std::int32_t> table = {4, 1, 5};  // positions 0..11 live in blocks 4, 1, 5
    std::vector<float> k_cache(num_blocks * block_size * kv_dim), v_cache(k_cache.size());
    std::vector<std::int32_t> positions(len), slots(len);
    for (int p = 0; p < len; ++p) {
      positions[p] = p;
      slots[p] = table[p / block_size] * block_size + p % block_size;
    }
    kv_write(k_cache.data(), v_cache.data(), keys.data(), values.data(), slots.data(), len, kv_dim);
    const std::int32_t query_start[2] = {0, len};
    ragged_batch_view b;
    b.num_tokens = len;
    b.positions = positions.data();
    b.num_seqs = 1;
    b.query_start = query_start;
    b.block_tables = table.data();
    b.block_table_stride = 3;
    std::vector<float> out(q.size());
    paged_attention(out.data(), q.data(), k_cache.data(), v_cache.data(), b, block_size, num_heads, num_kv_heads,
                    head_dim);
    for (int t = 0; t < len; ++t) {
      for (int h = 0; h < num_heads; ++h) {
        const float* qh = &q[(t * num_heads + h) * head_dim];
        const int kvh = h / group;
        std::vector<double> w(t + 1);
        double max_w = -1e30, sum = 0;
        for (int p = 0; p <= t; ++p) {
          double dot = 0;
          for (int i = 0; i < head_dim; ++i) dot += qh[i] * keys[p * kv_dim + kvh * head_dim + i];
          w[p] = dot / std::sqrt(double(head_dim));
          max_w = std::max(max_w, w[p]);
        }
        for (auto& x : w) sum += (x = std::exp(x - max_w));
        for (int i = 0; i < head_dim; ++i) {
          double expected = 0;
          for (int p = 0; p <= t; ++p) expected += w[p] / sum * values[p * kv_dim + kvh * head_dim + i];
          CHECK(out[(t * num_heads + h) * head_dim + i] == Approx(expected).margin(1e-5));
        }
      }
    }
  }
}

TEST_CASE("classifier_rows equals the named entries of the full classifier GEMM", "[kernels]") {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  const int dim = 37, vocab = 53, num_tokens = 3;
  std::vector<float> normed(std::size_t(num_tokens) * dim), classifier(std::size_t(vocab) * dim);
  for (auto* v : {&normed, &classifier}) for (auto& x : *v) x = normal(rng);
  std::vector<float> full(std::size_t(num_tokens) * vocab);
  linear(full.data(), normed.data(), classifier.data(), nullptr, num_tokens, dim, vocab);
  const std::vector<std::int32_t> positions = {2, 0, 2, 1}, rows = {52, 0, 17, 17};
  std::vector<float> out(rows.size());
  classifier_rows(out.data(), normed.data(), classifier.data(), positions.data(), rows.data(), int(rows.size()), dim);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    CHECK(out[k] == Approx(full[std::size_t(positions[k]) * vocab + std::size_t(rows[k])]).margin(1e-5));
  }
}
