// The vector kernel tables (portable, AVX2, AVX-512: each one this CPU runs) against
// double-precision references, and their batch invariance: a row's result must be the
// same bits whatever else is computed with it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_isa.hpp"

using namespace inflight::kernels::cpu;

namespace {

std::vector<cpu_isa> runnable_isas() {
  std::vector<cpu_isa> out;
  for (auto isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512, cpu_isa::avx512_vnni}) {
    if (can_run(isa)) out.push_back(isa);
  }
  return out;
}

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace

TEST_CASE("the detected kernel table runs on this CPU, and the portable one everywhere", "[kernels][isa]") {
  CHECK(can_run(cpu_isa::portable));
  CHECK(can_run(detect_cpu_isa()));
  CHECK(kernels_for(detect_cpu_isa()).isa == detect_cpu_isa());
  INFO("detected: " << to_string(detect_cpu_isa()));
}

TEST_CASE("gemm of every table equals a double-precision reference, with odd shapes and tails", "[kernels][gemm]") {
  std::mt19937 rng(11);
  for (auto isa : runnable_isas()) {
    const auto& k = kernels_for(isa);
    for (int depth : {1, 7, 16, 33, 172}) {
      for (int n : {1, 5, 6, 7, 13}) {
        const int out = 37, row_begin = 3, row_end = 34;  // a slice, not the whole layer
        const auto x = random_vector(std::size_t(n) * depth, rng), w = random_vector(std::size_t(out) * depth, rng);
        for (bool accumulate : {false, true}) {
          auto y = random_vector(std::size_t(n) * out, rng);
          const auto before = y;
          k.gemm({x.data(), depth, w.data(), depth, y.data(), out, n, depth, accumulate}, row_begin, row_end);
          for (int t = 0; t < n; ++t) {
            for (int o = 0; o < out; ++o) {
              const float got = y[std::size_t(t) * out + o], old = before[std::size_t(t) * out + o];
              INFO(to_string(isa) << " k " << depth << " n " << n << " t " << t << " o " << o);
              if (o < row_begin || o >= row_end) {
                CHECK(got == old);  // rows outside the slice are untouched
                continue;
              }
              double ref = accumulate ? old : 0.0, magnitude = std::abs(ref);
              for (int i = 0; i < depth; ++i) {
                const double p = double(x[std::size_t(t) * depth + i]) * w[std::size_t(o) * depth + i];
                ref += p;
                magnitude += std::abs(p);
              }
              // fp32 accumulation: a few units of rounding per term, relative to the terms' size.
              CHECK(std::abs(got - ref) <= 1e-6 * magnitude * std::sqrt(double(depth)) + 1e-30);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gemm rows are batch-invariant: the same bits alone, in any batch, any slice", "[kernels][gemm]") {
  std::mt19937 rng(5);
  const int depth = 100, out = 23, n = 11;
  const auto x = random_vector(std::size_t(n) * depth, rng), w = random_vector(std::size_t(out) * depth, rng);
  for (auto isa : runnable_isas()) {
    const auto& k = kernels_for(isa);
    std::vector<float> whole(std::size_t(n) * out);
    k.gemm({x.data(), depth, w.data(), depth, whole.data(), out, n, depth, false}, 0, out);
    for (int t = 0; t < n; ++t) {
      std::vector<float> alone(out);
      k.gemm({x.data() + std::size_t(t) * depth, depth, w.data(), depth, alone.data(), out, 1, depth, false}, 0, out);
      INFO(to_string(isa) << " token " << t);
      CHECK(same_bits(alone.data(), whole.data() + std::size_t(t) * out, out));
    }
    // Slices that cut the 4-row micro-tiles elsewhere.
    std::vector<float> sliced(whole.size());
    for (int r = 0; r < out; r += 3) {
      k.gemm({x.data(), depth, w.data(), depth, sliced.data(), out, n, depth, false}, r, std::min(out, r + 3));
    }
    CHECK(same_bits(sliced.data(), whole.data(), whole.size()));
  }
}

TEST_CASE("attention of every table equals naive softmax attention through a shuffled block table",
          "[kernels][attention]") {
  std::mt19937 rng(9);
  const int block_size = 4, num_blocks = 16, kv_heads = 2;
  for (auto isa : runnable_isas()) {
    for (int head_dim : {8, 64, 72}) {
      const int kv_dim = kv_heads * head_dim;
      const auto k_cache = random_vector(std::size_t(num_blocks) * block_size * kv_dim, rng);
      const auto v_cache = random_vector(k_cache.size(), rng);
      const std::vector<std::int32_t> table = {9, 2, 14, 0, 7, 11, 3, 5, 1, 12};
      for (int num_keys : {1, 3, 4, 17, 40}) {
        const auto q = random_vector(std::size_t(head_dim), rng, 0.5f);
        std::vector<float> scores(static_cast<std::size_t>(num_keys)), out(static_cast<std::size_t>(head_dim));
        attention_args a;
        a.q = q.data();
        // The second KV head's region: [kv heads][blocks][block_size][head_dim].
        const std::size_t head_region = std::size_t(num_blocks) * block_size * head_dim;
        a.k_cache = reinterpret_cast<const std::byte*>(k_cache.data() + head_region);
        a.v_cache = reinterpret_cast<const std::byte*>(v_cache.data() + head_region);
        a.block_table = table.data();
        a.block_size = block_size;
        a.num_keys = num_keys;
        a.head_dim = head_dim;
        a.scale = 1.0f / std::sqrt(float(head_dim));
        a.scores = scores.data();
        a.out = out.data();
        kernels_for(isa).attention(a);
        std::vector<double> w(static_cast<std::size_t>(num_keys));
        double max_w = -1e300, sum = 0.0;
        for (int p = 0; p < num_keys; ++p) {
          const std::size_t row = head_region + (std::size_t(table[p / block_size]) * block_size + p % block_size) * head_dim;
          double dot = 0.0;
          for (int i = 0; i < head_dim; ++i) dot += double(q[i]) * k_cache[row + i];
          w[p] = dot * a.scale;
          max_w = std::max(max_w, w[p]);
        }
        for (auto& x : w) sum += (x = std::exp(x - max_w));
        for (int i = 0; i < head_dim; ++i) {
          double expected = 0.0;
          for (int p = 0; p < num_keys; ++p) {
            const std::size_t row = head_region + (std::size_t(table[p / block_size]) * block_size + p % block_size) * head_dim;
            expected += w[p] / sum * v_cache[row + i];
          }
          INFO(to_string(isa) << " head_dim " << head_dim << " keys " << num_keys << " i " << i);
          CHECK(out[i] == Approx(expected).margin(2e-6));
        }
      }
    }
  }
}

TEST_CASE("rmsnorm and silu rows of every table equal their formulas", "[kernels]") {
  std::mt19937 rng(2);
  for (auto isa : runnable_isas()) {
    const auto& k = kernels_for(isa);
    // Rows of order 3, and rows so small (mean square 1e-8, or 0) that the epsilon
    // decides the scale: without it the tiny rows would come out ~30x too large, the
    // zero row as NaN.
    for (float magnitude : {3.0f, 1e-4f, 0.0f}) {
      for (int dim : {1, 15, 64, 100}) {
        auto x = random_vector(std::size_t(dim), rng);
        for (auto& v : x) v *= magnitude;
        const auto w = random_vector(std::size_t(dim), rng);
        std::vector<float> out(static_cast<std::size_t>(dim));
        k.rmsnorm_row(out.data(), x.data(), w.data(), dim, 1e-5f);
        double ss = 0.0;
        for (float v : x) ss += double(v) * v;
        const double scale = 1.0 / std::sqrt(ss / dim + 1e-5);
        for (int i = 0; i < dim; ++i) {
          INFO(to_string(isa) << " magnitude " << magnitude << " dim " << dim << " i " << i);
          CHECK(out[i] == Approx(w[i] * scale * x[i]).epsilon(2e-6).margin(1e-7 * magnitude));
        }
      }
    }
    // Wide range: silu saturates to 0 and to g for large |g|, and exp must not overflow.
    std::vector<float> gate = random_vector(300, rng, 6.0f), up = random_vector(300, rng);
    gate[0] = -120.0f, gate[1] = 120.0f, gate[2] = 0.0f, gate[3] = -88.5f, gate[4] = 89.0f;
    auto got = gate;
    k.silu_mul(got.data(), up.data(), int(got.size()));
    for (std::size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i], expected = g / (1.0 + std::exp(-g)) * up[i];
      INFO(to_string(isa) << " g " << g);
      CHECK(std::isfinite(got[i]));
      CHECK(got[i] == Approx(expected).epsilon(4e-6).margin(1e-30));
    }
    // GeGLU: tanh GELU, saturating to 0 and g at the ends.
    got = gate;
    k.gelu_mul(got.data(), up.data(), int(got.size()));
    for (std::size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i];
      // 0.5 g (1 + tanh u) written as g sigmoid(2u): in double the first form cancels to 0
      // for g below about -6.
      const double u = std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g);
      const double expected = g / (1.0 + std::exp(-2.0 * u)) * up[i];
      if (std::abs(g) < 3) CHECK(expected == Approx(0.5 * g * (1.0 + std::tanh(u)) * up[i]).epsilon(1e-9));
      INFO(to_string(isa) << " gelu g " << g);
      CHECK(std::isfinite(got[i]));
      CHECK(got[i] == Approx(expected).epsilon(2e-5).margin(1e-30));
    }
  }
}

TEST_CASE("gpt-oss's clamped SwiGLU rows of every table equal the formula", "[kernels]") {
  std::mt19937 rng(4);
  for (auto isa : runnable_isas()) {
    const auto& k = kernels_for(isa);
    // Both sides of both clamps, and large negative gates (the sigmoid's tail).
    std::vector<float> gate = random_vector(200, rng, 12.0f), up = random_vector(200, rng, 12.0f);
    gate[0] = -120.0f, gate[1] = 120.0f, gate[2] = 7.0f, gate[3] = 6.99f, up[4] = -7.5f, up[5] = 7.5f;
    auto got = gate;
    k.swiglu_oai_mul(got.data(), up.data(), int(got.size()));
    for (std::size_t i = 0; i < gate.size(); ++i) {
      const double g = std::min(double(gate[i]), 7.0), u = std::clamp(double(up[i]), -7.0, 7.0);
      const double expected = g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
      INFO(to_string(isa) << " gate " << gate[i] << " up " << up[i]);
      CHECK(std::isfinite(got[i]));
      CHECK(got[i] == Approx(expected).epsilon(2e-5).margin(1e-30));
    }
  }
}

TEST_CASE("attention with a sliding window and soft-capped scores equals the naive formula", "[kernels][attention]") {
  std::mt19937 rng(19);
  const int block_size = 4, num_blocks = 16, head_dim = 40;
  const auto k_cache = random_vector(std::size_t(num_blocks) * block_size * head_dim, rng);
  const auto v_cache = random_vector(k_cache.size(), rng);
  const std::vector<std::int32_t> table = {9, 2, 14, 0, 7, 11, 3, 5, 1, 12, 4, 6, 8, 10, 13, 15};
  for (auto isa : runnable_isas()) {
    for (int window : {0, 1, 3, 4, 7, 40}) {
      for (float softcap : {0.0f, 0.8f}) {
       for (float sink : {-INFINITY, 0.5f, 6.0f}) {  // none, one among the scores, one above them all
        const int num_keys = 20, n = 9;  // queries at positions 19..27
        const auto q = random_vector(std::size_t(n) * head_dim, rng, 3.0f);  // scores large enough for the cap to bite
        std::vector<float> scores(std::size_t(attention_tile) * (num_keys + n)), out(std::size_t(n) * head_dim);
        attention_args a;
        a.q = q.data();
        a.q_stride = a.out_stride = head_dim;
        a.num_queries = n;
        a.k_cache = reinterpret_cast<const std::byte*>(k_cache.data());
        a.v_cache = reinterpret_cast<const std::byte*>(v_cache.data());
        a.block_table = table.data();
        a.block_size = block_size;
        a.num_keys = num_keys;
        a.head_dim = head_dim;
        a.scale = 0.3f;
        a.window = window;
        a.softcap = softcap;
        a.sink = sink;
        a.scores = scores.data();
        a.out = out.data();
        kernels_for(isa).attention(a);
        for (int j = 0; j < n; ++j) {
          const int last = num_keys + j, first = window > 0 ? std::max(0, last - window) : 0;
          std::vector<double> w(std::size_t(last), 0.0);
          double max_w = -1e300, sum = 0.0;
          const auto row = [&](int p) { return (std::size_t(table[p / block_size]) * block_size + p % block_size) * head_dim; };
          for (int p = first; p < last; ++p) {
            double dot = 0.0;
            for (int i = 0; i < head_dim; ++i) dot += double(q[std::size_t(j) * head_dim + i]) * k_cache[row(p) + i];
            w[p] = dot * a.scale;
            if (softcap > 0) w[p] = softcap * std::tanh(w[p] / softcap);
            max_w = std::max(max_w, w[p]);
          }
          max_w = std::max(max_w, double(sink));
          for (int p = first; p < last; ++p) sum += (w[p] = std::exp(w[p] - max_w));
          if (sink > -INFINITY) sum += std::exp(sink - max_w);
          for (int i = 0; i < head_dim; ++i) {
            double expected = 0.0;
            for (int p = first; p < last; ++p) expected += w[p] / sum * v_cache[row(p) + i];
            INFO(to_string(isa) << " window " << window << " softcap " << softcap << " sink " << sink << " query "
                                << j << " i " << i);
            CHECK(out[std::size_t(j) * head_dim + i] == Approx(expected).margin(2e-5));
          }
        }
       }
      }
    }
  }
}
