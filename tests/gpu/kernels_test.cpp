// Element-wise CUDA kernels against their CPU twins (kernels/cpu/llama.hpp, twins.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "kernels/cpu/llama.hpp"
#include "kernels/cpu/twins.hpp"
#include "kernels/cuda/gemm.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace inflight;
using namespace inflight::test::gpu;

namespace {

constexpr kc::dtype dtypes[] = {kc::dtype::bf16, kc::dtype::f16};

}  // namespace

TEST_CASE("embedding gather copies the rows of the ids", "[gpu]") {
  require_device();
  std::mt19937 rng(1);
  for (const auto dt : dtypes) {
    const int vocab = 97, dim = 131, n = 45;
    const auto table = rounded(random_floats(std::size_t(vocab) * dim, rng), dt);
    std::vector<std::int32_t> ids(n);
    for (auto& id : ids) id = std::int32_t(rng() % vocab);
    std::vector<float> want(std::size_t(n) * dim);
    kernels::cpu::embedding_gather(want.data(), table.data(), ids.data(), n, dim);
    auto d_table = upload(table, dt);
    auto d_ids = upload_i32(ids);
    kc::device_buffer d_x;
    require_ok(d_x.try_allocate(want.size() * sizeof(float)));
    require_ok(kc::embedding_gather(dt, d_x.as<float>(), d_table.as(), d_ids.as<std::int32_t>(), n, dim, nullptr));
    REQUIRE(download_f32(d_x, want.size()) == want);
  }
}

TEST_CASE("fused residual add + rmsnorm matches the CPU twin", "[gpu]") {
  require_device();
  std::mt19937 rng(2);
  for (const auto dt : dtypes) {
    for (const int dim : {1, 37, 256, 4097}) {
      for (const bool use_rows : {false, true}) {
        DYNAMIC_SECTION(name_of(dt) << " dim " << dim << " rows " << use_rows) {
          const int num_x = 19, n = use_rows ? 7 : num_x;
          const auto x0 = random_floats(std::size_t(num_x) * dim, rng, 3.0f);
          const auto delta = rounded(random_floats(x0.size(), rng), dt);
          const auto w = random_floats(std::size_t(dim), rng);
          std::vector<std::int32_t> rows(static_cast<std::size_t>(n));
          for (auto& r : rows) r = std::int32_t(rng() % num_x);
          std::sort(rows.begin(), rows.end());
          rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
          const int num_rows = use_rows ? int(rows.size()) : num_x;
          auto x_cpu = x0;
          std::vector<float> want(std::size_t(num_rows) * dim);
          kernels::cpu::add_rmsnorm(want.data(), x_cpu.data(), delta.data(), w.data(), use_rows ? rows.data() : nullptr,
                                    num_rows, dim, 1e-5f, true);
          auto d_x = upload_f32(x0);
          auto d_delta = upload(delta, dt);
          auto d_w = upload_f32(w);
          auto d_rows = upload_i32(rows);
          kc::device_buffer d_out;
          require_ok(d_out.try_allocate(want.size() * 2));
          require_ok(kc::add_rmsnorm(dt, d_out.as(), d_x.as<float>(), d_delta.as(), d_w.as<float>(),
                                     use_rows ? d_rows.as<std::int32_t>() : nullptr, num_rows, dim, 1e-5f, true,
                                     nullptr));
          require_close(download_f32(d_x, x0.size()), x_cpu, 1e-5f);
          require_close(download(d_out, want.size(), dt), want, tolerance(dt));
        }
      }
    }
  }
}

TEST_CASE("rope rotates q and k like the CPU (both styles, llama-3 scaling)", "[gpu]") {
  require_device();
  std::mt19937 rng(3);
  for (const auto dt : dtypes) {
    for (const bool interleaved : {true, false}) {
      for (const bool scaled : {false, true}) {
        kernels::cpu::llama_shape s;
        s.num_heads = 8;
        s.num_kv_heads = 2;
        s.head_dim = 64;
        s.rope_theta = 500000.0f;
        s.rope_interleaved = interleaved;
        if (scaled) s.rope_factor = 8.0f;
        const int n = 33, qd = s.num_heads * s.head_dim, kvd = s.num_kv_heads * s.head_dim, stride = qd + 2 * kvd;
        std::vector<std::int32_t> pos(n);
        for (auto& p : pos) p = std::int32_t(rng() % 8192);
        const auto qkv = rounded(random_floats(std::size_t(n) * stride, rng), dt);
        std::vector<float> q(std::size_t(n) * qd), k(std::size_t(n) * kvd);
        for (int t = 0; t < n; ++t) {
          std::copy_n(qkv.begin() + std::ptrdiff_t(t) * stride, qd, q.begin() + std::ptrdiff_t(t) * qd);
          std::copy_n(qkv.begin() + std::ptrdiff_t(t) * stride + qd, kvd, k.begin() + std::ptrdiff_t(t) * kvd);
        }
        kernels::cpu::rope(q.data(), k.data(), pos.data(), n, s);
        std::vector<float> inv(std::size_t(s.head_dim / 2));
        for (int j = 0; j < s.head_dim / 2; ++j) inv[std::size_t(j)] = kernels::cpu::rope_inv_freq(j, s);
        auto d_qkv = upload(qkv, dt);
        auto d_pos = upload_i32(pos);
        auto d_inv = upload_f32(inv);
        require_ok(kc::rope(dt, d_qkv.as(), stride, d_pos.as<std::int32_t>(), d_inv.as<float>(), n, s.num_heads,
                            s.num_kv_heads, s.head_dim, interleaved, nullptr));
        const auto got = download(d_qkv, qkv.size(), dt);
        std::vector<float> got_q(q.size()), got_k(k.size()), got_v(std::size_t(n) * kvd), want_v(got_v.size());
        for (int t = 0; t < n; ++t) {
          std::copy_n(got.begin() + std::ptrdiff_t(t) * stride, qd, got_q.begin() + std::ptrdiff_t(t) * qd);
          std::copy_n(got.begin() + std::ptrdiff_t(t) * stride + qd, kvd, got_k.begin() + std::ptrdiff_t(t) * kvd);
          std::copy_n(got.begin() + std::ptrdiff_t(t) * stride + qd + kvd, kvd, got_v.begin() + std::ptrdiff_t(t) * kvd);
          std::copy_n(qkv.begin() + std::ptrdiff_t(t) * stride + qd + kvd, kvd, want_v.begin() + std::ptrdiff_t(t) * kvd);
        }
        require_close(got_q, q, tolerance(dt));
        require_close(got_k, k, tolerance(dt));
        REQUIRE(got_v == want_v);  // v columns untouched
      }
    }
  }
}

TEST_CASE("silu_mul and add_bias match their CPU twins", "[gpu]") {
  require_device();
  std::mt19937 rng(4);
  for (const auto dt : dtypes) {
    const int n = 23, hidden = 1001;
    const auto gu = rounded(random_floats(std::size_t(n) * 2 * hidden, rng, 2.0f), dt);
    std::vector<float> want(std::size_t(n) * hidden);
    kernels::cpu::silu_mul_fused(want.data(), gu.data(), n, hidden);
    auto d_gu = upload(gu, dt);
    kc::device_buffer d_out;
    require_ok(d_out.try_allocate(want.size() * 2));
    require_ok(kc::silu_mul(dt, d_out.as(), d_gu.as(), n, hidden, nullptr));
    require_close(download(d_out, want.size(), dt), want, tolerance(dt));

    const int width = 77, stride = 90;
    auto y = rounded(random_floats(std::size_t(n) * stride, rng), dt);
    const auto bias = random_floats(std::size_t(width), rng);
    auto d_y = upload(y, dt);
    auto d_bias = upload_f32(bias);
    require_ok(kc::add_bias(dt, d_y.as(), d_bias.as<float>(), n, width, stride, nullptr));
    kernels::cpu::add_bias(y.data(), bias.data(), n, width, stride);
    require_close(download(d_y, y.size(), dt), y, tolerance(dt));
  }
}

TEST_CASE("kv_write scatters k and v rows to their slots", "[gpu]") {
  require_device();
  std::mt19937 rng(5);
  for (const auto dt : dtypes) {
    const int n = 29, kvd = 96, qd = 128, stride = qd + 2 * kvd, num_slots = 200;
    const auto src = rounded(random_floats(std::size_t(n) * stride, rng), dt);
    std::vector<std::int32_t> slots(static_cast<std::size_t>(num_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(std::size_t(n));
    std::vector<float> k(std::size_t(n) * kvd), v(k.size());
    for (int t = 0; t < n; ++t) {
      std::copy_n(src.begin() + std::ptrdiff_t(t) * stride + qd, kvd, k.begin() + std::ptrdiff_t(t) * kvd);
      std::copy_n(src.begin() + std::ptrdiff_t(t) * stride + qd + kvd, kvd, v.begin() + std::ptrdiff_t(t) * kvd);
    }
    std::vector<float> k_cache(std::size_t(num_slots) * kvd, 0.0f), v_cache(k_cache.size(), 0.0f);
    kernels::cpu::kv_write(k_cache.data(), v_cache.data(), k.data(), v.data(), slots.data(), n, kvd);
    auto d_src = upload(src, dt);
    auto d_k = upload(std::vector<float>(k_cache.size(), 0.0f), dt);
    auto d_v = upload(std::vector<float>(v_cache.size(), 0.0f), dt);
    auto d_slots = upload_i32(slots);
    require_ok(kc::kv_write(dt, d_k.as(), d_v.as(), d_src.as(), stride, qd, qd + kvd, d_slots.as<std::int32_t>(), n,
                            kvd, nullptr));
    REQUIRE(download(d_k, k_cache.size(), dt) == k_cache);
    REQUIRE(download(d_v, v_cache.size(), dt) == v_cache);
  }
}

TEST_CASE("greedy sampling picks the lowest arg-max and its logprob", "[gpu]") {
  require_device();
  std::mt19937 rng(6);
  for (const int vocab : {1, 31, 32000, 128257}) {
    const int rows = 5;
    auto logits = random_floats(std::size_t(rows) * vocab, rng, 4.0f);
    if (vocab > 40) {  // planted ties: the lowest id must win
      logits[std::size_t(vocab) + 7] = 100.0f;
      logits[std::size_t(vocab) + 30] = 100.0f;
    }
    std::vector<std::int32_t> want_tok(rows);
    std::vector<float> want_lp(rows);
    kernels::cpu::greedy_rows(logits.data(), rows, vocab, want_tok.data(), want_lp.data());
    auto d_logits = upload_f32(logits);
    kc::device_buffer d_tok, d_lp;
    require_ok(d_tok.try_allocate(rows * 4));
    require_ok(d_lp.try_allocate(rows * 4));
    require_ok(kc::greedy_sample(d_logits.as<float>(), rows, vocab, d_tok.as<std::int32_t>(), d_lp.as<float>(), nullptr));
    REQUIRE(download_i32(d_tok, rows) == want_tok);
    require_close(download_f32(d_lp, rows), want_lp, 1e-4f);
    if (vocab > 40) REQUIRE(want_tok[1] == 7);
  }
}

TEST_CASE("cuBLAS linear matches the CPU GEMM", "[gpu]") {
  require_device();
  std::mt19937 rng(7);
  kc::blas blas;
  require_ok(kc::blas::try_create(nullptr, 4u << 20, blas));
  for (const auto dt : dtypes) {
    for (const bool f32_out : {false, true}) {
      const int n = 37, in = 257, out = 301;
      const auto x = rounded(random_floats(std::size_t(n) * in, rng), dt);
      const auto w = rounded(random_floats(std::size_t(out) * in, rng, 0.05f), dt);
      std::vector<float> want(std::size_t(n) * out);
      kernels::cpu::linear(want.data(), x.data(), w.data(), nullptr, n, in, out);
      auto d_x = upload(x, dt);
      auto d_w = upload(w, dt);
      kc::device_buffer d_y;
      require_ok(d_y.try_allocate(want.size() * 4));
      require_ok(blas.linear(dt, d_x.as(), d_w.as(), d_y.as(), f32_out, n, in, out));
      const auto got = f32_out ? download_f32(d_y, want.size()) : download(d_y, want.size(), dt);
      require_close(got, want, f32_out ? 1e-3f : tolerance(dt));
    }
  }
}

TEST_CASE("qk_norm normalises each q and k head like the CPU twin and leaves v alone", "[gpu]") {
  require_device();
  std::mt19937 rng(8);
  for (const auto dt : dtypes) {
    for (const int head_dim : {64, 128, 256}) {
      DYNAMIC_SECTION(name_of(dt) << " head_dim " << head_dim) {
        const int n = 29, num_heads = 8, num_kv_heads = 2;
        const int qd = num_heads * head_dim, kvd = num_kv_heads * head_dim, stride = qd + 2 * kvd;
        // Heads of very different scales: a kernel that skips the per-head scale cannot match.
        auto qkv = random_floats(std::size_t(n) * stride, rng);
        for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] *= float(1 + (i / std::size_t(head_dim)) % 7);
        qkv = rounded(qkv, dt);
        const auto q_norm = random_floats(std::size_t(head_dim), rng, 2.0f);
        const auto k_norm = random_floats(std::size_t(head_dim), rng, 2.0f);
        auto want = qkv;
        kernels::cpu::qk_norm(want.data(), stride, q_norm.data(), k_norm.data(), n, num_heads, num_kv_heads, head_dim,
                              1e-6f);
        auto d_qkv = upload(qkv, dt);
        auto d_q = upload_f32(q_norm);
        auto d_k = upload_f32(k_norm);
        require_ok(kc::qk_norm(dt, d_qkv.as(), stride, d_q.as<float>(), d_k.as<float>(), n, num_heads, num_kv_heads,
                               head_dim, 1e-6f, nullptr));
        const auto got = download(d_qkv, qkv.size(), dt);
        require_close(got, want, tolerance(dt));
        for (int t = 0; t < n; ++t) {
          const auto v = std::ptrdiff_t(t) * stride + qd + kvd;
          REQUIRE(std::equal(got.begin() + v, got.begin() + v + kvd, qkv.begin() + v));
        }
      }
    }
  }
}

TEST_CASE("classifier_rows computes the named rows like the CPU twin", "[gpu]") {
  require_device();
  std::mt19937 rng(9);
  for (const auto dt : dtypes) {
    const int dim = 1024 + 7, vocab = 301, num_scored = 5;
    const auto normed = rounded(random_floats(std::size_t(num_scored) * dim, rng), dt);
    const auto classifier = rounded(random_floats(std::size_t(vocab) * dim, rng, 0.05f), dt);
    const std::vector<std::int32_t> positions = {0, 0, 3, 4, 4, 1}, rows = {7, 300, 0, 7, 150, 299};
    std::vector<float> want(rows.size());
    kernels::cpu::classifier_rows(want.data(), normed.data(), classifier.data(), positions.data(), rows.data(),
                                  int(rows.size()), dim);
    auto d_normed = upload(normed, dt);
    auto d_classifier = upload(classifier, dt);
    auto d_positions = upload_i32(positions);
    auto d_rows = upload_i32(rows);
    kc::device_buffer d_out;
    require_ok(d_out.try_allocate(want.size() * sizeof(float)));
    require_ok(kc::classifier_rows(dt, d_out.as<float>(), d_normed.as(), d_classifier.as(),
                                   d_positions.as<std::int32_t>(), d_rows.as<std::int32_t>(), int(rows.size()), dim,
                                   nullptr));
    require_close(download_f32(d_out, want.size()), want, 1e-3f);
  }
}
