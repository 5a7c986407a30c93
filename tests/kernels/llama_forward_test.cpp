// The parallel forward pass: the same bits on any number of threads, a sequence's logits
// the same bits alone or in a ragged batch, and every kernel table close to the portable one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/llama.hpp"

using namespace inflight::kernels::cpu;

namespace {

/// Layer kinds beyond the plain Llama layer.
struct toy_options {
  bool extras = false;  ///< Q/K/V biases and Qwen3's per-head RMSNorm of q and k
  int num_experts = 0;  ///< a mixture of experts (0: dense)
  int experts_per_token = 0;
  bool shared_expert = false;  ///< Qwen2-MoE's gated shared expert
  bool sigmoid = false;
  bool normalize = false;
  int rope_dims = 0;
  rope_scaling_kind scaling = rope_scaling_kind::none;
};

/// A small random model (GQA, a hidden size that is no multiple of any vector width)
/// with its own paged KV memory.
struct toy_model {
  llama_shape shape;
  std::vector<std::vector<float>> tensors;
  std::vector<llama_layer_view> layers;
  llama_weights_view weights;
  int num_blocks = 12, block_size = 4;
  std::vector<std::vector<float>> k_cache, v_cache;
  std::vector<std::byte*> k_ptrs, v_ptrs;

  /// has_extras: Q/K/V biases and Qwen3's per-head RMSNorm of q and k.
  explicit toy_model(bool has_extras = false) : toy_model(toy_options{has_extras}) {}

  explicit toy_model(const toy_options& o) {
    const bool has_extras = o.extras;
    shape.dim = 48;
    shape.hidden_dim = 100;
    shape.num_layers = 2;
    shape.num_heads = 4;
    shape.num_kv_heads = 2;
    shape.head_dim = 12;
    shape.vocab_size = 70;
    shape.num_experts = o.num_experts;
    shape.experts_per_token = o.experts_per_token;
    shape.expert_hidden_dim = 36;
    shape.expert_sigmoid = o.sigmoid;
    shape.expert_normalize = o.normalize;
    shape.rope_dims = o.rope_dims;
    shape.rope_scaling = o.scaling;
    if (o.scaling != rope_scaling_kind::none) {
      shape.rope_factor = 4.0f;
      shape.rope_original_max_position = 16;
      shape.rope_mscale = o.scaling == rope_scaling_kind::yarn ? 1.2f : 1.0f;
    }
    if (o.num_experts > 0 && !o.shared_expert) shape.hidden_dim = 0;
    std::mt19937 rng(4);
    auto tensor = [&](std::size_t n, float scale) {
      std::normal_distribution<float> normal(0.0f, scale);
      tensors.emplace_back(n);
      for (auto& x : tensors.back()) x = normal(rng);
      return tensors.back().data();
    };
    tensors.reserve(64);
    const std::size_t d = shape.dim, h = shape.hidden_dim, qd = shape.num_heads * shape.head_dim,
                      kvd = shape.num_kv_heads * shape.head_dim;
    for (int l = 0; l < shape.num_layers; ++l) {
      llama_layer_view v;
      v.attn_norm = tensor(d, 1.0f);
      v.wq = f32_weights(tensor(qd * d, 0.2f), d);
      v.wk = f32_weights(tensor(kvd * d, 0.2f), d);
      v.wv = f32_weights(tensor(kvd * d, 0.2f), d);
      v.wo = f32_weights(tensor(d * qd, 0.2f), qd);
      v.ffn_norm = tensor(d, 1.0f);
      if (h > 0) {
        v.w_gate = f32_weights(tensor(h * d, 0.2f), d);
        v.w_down = f32_weights(tensor(d * h, 0.2f), h);
        v.w_up = f32_weights(tensor(h * d, 0.2f), d);
      }
      if (o.num_experts > 0) {
        const std::size_t e = o.num_experts, ff = shape.expert_hidden_dim;
        v.router = f32_weights(tensor(e * d, 0.5f), d);
        v.gate_exps = f32_weights(tensor(e * ff * d, 0.2f), d);
        v.up_exps = f32_weights(tensor(e * ff * d, 0.2f), d);
        v.down_exps = f32_weights(tensor(e * d * ff, 0.2f), ff);
        if (o.shared_expert) v.shared_expert_gate = tensor(d, 0.3f);
      }
      if (has_extras) {
        v.bq = tensor(qd, 0.5f);
        v.bk = tensor(kvd, 0.5f);
        v.bv = tensor(kvd, 0.5f);
        v.q_norm = tensor(shape.head_dim, 1.0f);
        v.k_norm = tensor(shape.head_dim, 1.0f);
      }
      layers.push_back(v);
    }
    weights = {f32_weights(tensor(shape.vocab_size * d, 1.0f), d), layers.data(), tensor(d, 1.0f),
               f32_weights(tensor(shape.vocab_size * d, 0.2f), d)};
    reset_cache();
  }

  void reset_cache() {
    const std::size_t floats = std::size_t(num_blocks) * block_size * shape.num_kv_heads * shape.head_dim;
    k_cache.assign(shape.num_layers, std::vector<float>(floats));
    v_cache.assign(shape.num_layers, std::vector<float>(floats));
    k_ptrs.clear();
    v_ptrs.clear();
    for (int l = 0; l < shape.num_layers; ++l) {
      k_ptrs.push_back(reinterpret_cast<std::byte*>(k_cache[l].data()));
      v_ptrs.push_back(reinterpret_cast<std::byte*>(v_cache[l].data()));
    }
  }
};

/// Sequences of a ragged batch: (tokens, start position, block table); every token is sampled.
struct toy_seq {
  std::vector<std::int32_t> tokens;
  int start = 0;
  std::vector<std::int32_t> blocks;
};

std::vector<float> run(toy_model& m, const std::vector<toy_seq>& seqs, const forward_options& options) {
  std::vector<std::int32_t> ids, positions, slots, query_start{0}, tables, logit_indices;
  const int stride = 3;
  for (const auto& s : seqs) {
    for (std::size_t j = 0; j < s.tokens.size(); ++j) {
      const int pos = s.start + int(j);
      ids.push_back(s.tokens[j]);
      positions.push_back(pos);
      slots.push_back(s.blocks[pos / m.block_size] * m.block_size + pos % m.block_size);
      logit_indices.push_back(std::int32_t(ids.size()) - 1);
    }
    query_start.push_back(std::int32_t(ids.size()));
    auto row = s.blocks;
    row.resize(stride, 0);
    tables.insert(tables.end(), row.begin(), row.end());
  }
  ragged_batch_view b;
  b.num_tokens = int(ids.size());
  b.token_ids = ids.data();
  b.positions = positions.data();
  b.slot_mapping = slots.data();
  b.num_seqs = int(seqs.size());
  b.query_start = query_start.data();
  b.block_tables = tables.data();
  b.block_table_stride = stride;
  b.num_logits = int(logit_indices.size());
  b.logit_indices = logit_indices.data();
  const paged_kv_view kv{m.k_ptrs.data(), m.v_ptrs.data(), m.num_blocks, m.block_size};
  llama_workspace ws;
  std::vector<float> logits(std::size_t(b.num_logits) * m.shape.vocab_size);
  llama_forward(m.shape, m.weights, kv, b, ws, logits.data(), nullptr, options);
  return logits;
}

/// A mixture of experts as its definition reads, token by token: the router's gates
/// (softmax over every expert or each one's sigmoid), the k best, renormalised when the
/// shape says so, each chosen expert's SwiGLU MLP scaled by its gate onto x.
void experts_one_by_one(const llama_shape& sh, const llama_layer_view& w, const std::vector<float>& xb,
                        std::vector<float>& x) {
  const int d = sh.dim, ff = sh.expert_hidden_dim, num_experts = sh.num_experts;
  const int n = int(xb.size()) / d;
  std::vector<float> logits(num_experts), hb(ff), hb2(ff), out(d);
  for (int t = 0; t < n; ++t) {
    const float* row = xb.data() + std::size_t(t) * d;
    linear(logits.data(), row, as_f32(w.router), nullptr, 1, d, num_experts);
    std::vector<double> p(num_experts);
    double sum = 0.0;
    for (int e = 0; e < num_experts; ++e) sum += p[e] = sh.expert_sigmoid ? 1.0 / (1.0 + std::exp(-logits[e])) : std::exp(logits[e]);
    if (!sh.expert_sigmoid) {
      for (auto& v : p) v /= sum;
    }
    std::vector<int> chosen(num_experts);
    for (int e = 0; e < num_experts; ++e) chosen[e] = e;
    std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return p[a] > p[b]; });
    chosen.resize(sh.experts_per_token);
    double total = 0.0;
    for (int e : chosen) total += p[e];
    for (int e : chosen) {
      const float gate = float(sh.expert_normalize ? p[e] / total : p[e]);
      linear(hb.data(), row, as_f32(w.gate_exps) + std::size_t(e) * ff * d, nullptr, 1, d, ff);
      linear(hb2.data(), row, as_f32(w.up_exps) + std::size_t(e) * ff * d, nullptr, 1, d, ff);
      silu_mul(hb.data(), hb2.data(), ff);
      linear(out.data(), hb.data(), as_f32(w.down_exps) + std::size_t(e) * d * ff, nullptr, 1, ff, d);
      for (int i = 0; i < d; ++i) x[std::size_t(t) * d + i] += gate * out[i];
    }
  }
}

/// The same step composed from the step-by-step kernels of llama.hpp (plain loops and
/// OpenBLAS): what the fused pass must compute, up to float rounding.
std::vector<float> run_reference(toy_model& m, const std::vector<toy_seq>& seqs) {
  std::vector<std::int32_t> ids, positions, slots, query_start{0}, tables, logit_indices;
  const int stride = 3;
  for (const auto& s : seqs) {
    for (std::size_t j = 0; j < s.tokens.size(); ++j) {
      const int pos = s.start + int(j);
      ids.push_back(s.tokens[j]);
      positions.push_back(pos);
      slots.push_back(s.blocks[pos / m.block_size] * m.block_size + pos % m.block_size);
      logit_indices.push_back(std::int32_t(ids.size()) - 1);
    }
    query_start.push_back(std::int32_t(ids.size()));
    auto row = s.blocks;
    row.resize(stride, 0);
    tables.insert(tables.end(), row.begin(), row.end());
  }
  const auto& sh = m.shape;
  const int n = int(ids.size()), d = sh.dim, qd = sh.num_heads * sh.head_dim, kvd = sh.num_kv_heads * sh.head_dim;
  ragged_batch_view b;
  b.num_tokens = n;
  b.token_ids = ids.data();
  b.positions = positions.data();
  b.slot_mapping = slots.data();
  b.num_seqs = int(seqs.size());
  b.query_start = query_start.data();
  b.block_tables = tables.data();
  b.block_table_stride = stride;
  std::vector<float> x(std::size_t(n) * d), xb(x.size()), q(std::size_t(n) * qd), k(std::size_t(n) * kvd),
      v(k.size()), attn(q.size()), proj(x.size()), hb(std::size_t(n) * sh.hidden_dim), hb2(hb.size());
  embedding_gather(x.data(), as_f32(m.weights.token_embedding), ids.data(), n, d);
  for (int l = 0; l < sh.num_layers; ++l) {
    const auto& w = m.layers[l];
    rmsnorm(xb.data(), x.data(), w.attn_norm, n, d, sh.norm_eps);
    linear(q.data(), xb.data(), as_f32(w.wq), w.bq, n, d, qd);
    linear(k.data(), xb.data(), as_f32(w.wk), w.bk, n, d, kvd);
    linear(v.data(), xb.data(), as_f32(w.wv), w.bv, n, d, kvd);
    if (w.q_norm != nullptr) {
      rmsnorm(q.data(), q.data(), w.q_norm, n * sh.num_heads, sh.head_dim, sh.norm_eps);
      rmsnorm(k.data(), k.data(), w.k_norm, n * sh.num_kv_heads, sh.head_dim, sh.norm_eps);
    }
    rope(q.data(), k.data(), positions.data(), n, sh);
    kv_write(m.k_ptrs[l], m.v_ptrs[l], kv_type::f32, k.data(), v.data(), slots.data(), n, kvd);
    paged_attention(attn.data(), q.data(), m.k_ptrs[l], m.v_ptrs[l], kv_type::f32, b, m.block_size, sh.num_heads,
                    sh.num_kv_heads, sh.head_dim);
    linear(proj.data(), attn.data(), as_f32(w.wo), nullptr, n, qd, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    rmsnorm(xb.data(), x.data(), w.ffn_norm, n, d, sh.norm_eps);
    if (sh.num_experts > 0) experts_one_by_one(sh, w, xb, x);
    if (sh.hidden_dim == 0) continue;
    linear(hb.data(), xb.data(), as_f32(w.w_gate), nullptr, n, d, sh.hidden_dim);
    linear(hb2.data(), xb.data(), as_f32(w.w_up), nullptr, n, d, sh.hidden_dim);
    silu_mul(hb.data(), hb2.data(), std::int64_t(hb.size()));
    for (int t = 0; t < n && w.shared_expert_gate != nullptr; ++t) {
      float dot = 0.0f;
      for (int i = 0; i < d; ++i) dot += xb[std::size_t(t) * d + i] * w.shared_expert_gate[i];
      for (int i = 0; i < sh.hidden_dim; ++i) hb[std::size_t(t) * sh.hidden_dim + i] /= 1.0f + std::exp(-dot);
    }
    linear(proj.data(), hb.data(), as_f32(w.w_down), nullptr, n, sh.hidden_dim, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  }
  rmsnorm(xb.data(), x.data(), m.weights.final_norm, n, d, sh.norm_eps);
  std::vector<float> logits(std::size_t(n) * sh.vocab_size);
  linear(logits.data(), xb.data(), as_f32(m.weights.classifier), nullptr, n, d, sh.vocab_size);
  return logits;
}

/// Two steps: prefills of three sequences, then one of them decodes while another prefills more.
std::vector<float> two_steps(toy_model& m, const forward_options& options) {
  m.reset_cache();
  run(m, {{{1, 5, 9, 2, 7}, 0, {3, 0}}, {{4, 4, 8}, 0, {5, 1}}, {{6, 2, 3, 3, 1, 0, 9}, 0, {2, 7}}}, options);
  return run(m, {{{11}, 5, {3, 0}}, {{12, 13, 14, 15}, 3, {5, 1}}}, options);
}

}  // namespace

TEST_CASE("the forward pass gives the same bits on 1, 2 or 3 threads", "[kernels][forward]") {
  toy_model m;
  for (auto isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512, cpu_isa::avx512_vnni}) {
    if (!can_run(isa)) continue;
    forward_options o;
    o.kernels = &kernels_for(isa);
    o.num_threads = 1;
    const auto one = two_steps(m, o);
    for (int threads : {2, 3}) {
      o.num_threads = threads;
      const auto many = two_steps(m, o);
      INFO(to_string(isa) << " threads " << threads);
      REQUIRE(many.size() == one.size());
      CHECK(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("a sequence's logits are the same bits alone and in a ragged batch", "[kernels][forward]") {
  toy_model m;
  forward_options o;
  o.num_threads = 2;
  const toy_seq s{{3, 1, 4, 1, 5, 9}, 0, {6, 2}};
  m.reset_cache();
  const auto alone = run(m, {s}, o);
  m.reset_cache();
  const auto together = run(m, {{{2, 7}, 0, {0}}, s, {{8, 8, 8, 8, 8}, 0, {1, 4}}}, o);
  // s's rows start after the first sequence's two tokens.
  const std::size_t vocab = m.shape.vocab_size;
  CHECK(std::memcmp(together.data() + 2 * vocab, alone.data(), alone.size() * sizeof(float)) == 0);
}

TEST_CASE("every kernel table's forward pass is close to the portable one", "[kernels][forward]") {
  toy_model m;
  forward_options o;
  o.num_threads = 2;
  o.kernels = &kernels_for(cpu_isa::portable);
  const auto ref = two_steps(m, o);
  for (auto isa : {cpu_isa::avx2, cpu_isa::avx512, cpu_isa::avx512_vnni}) {
    if (!can_run(isa)) continue;
    o.kernels = &kernels_for(isa);
    const auto got = two_steps(m, o);
    REQUIRE(got.size() == ref.size());
    // Different summation orders and exp: float rounding only.
    for (std::size_t i = 0; i < ref.size(); ++i) {
      INFO(to_string(isa) << " logit " << i);
      CHECK(got[i] == Approx(ref[i]).epsilon(1e-4).margin(1e-4));
    }
  }
}

TEST_CASE("stage times add up one step at a time", "[kernels][forward]") {
  toy_model m;
  stage_times times;
  forward_options o;
  o.num_threads = 1;  // every stage then runs on the timed thread
  o.times = &times;
  const auto start = std::chrono::steady_clock::now();
  two_steps(m, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(times.num_steps == 2);
  double total = 0.0;
  for (int i = 0; i < num_forward_stages; ++i) {
    const auto stage = forward_stage(i);
    INFO(to_string(stage));
    if (stage != forward_stage::barrier_wait) CHECK(times.seconds[i] > 0.0);
    total += times.seconds[i];
  }
  // The stages are disjoint pieces of the steps, so they never add up to more than the steps took.
  CHECK(total <= wall);
}

namespace {

/// The fused pass of every kernel table against the step-by-step reference, two steps.
void check_fused_equals_reference(toy_model& m) {
  const std::vector<toy_seq> first = {{{1, 5, 9, 2, 7}, 0, {3, 0}}, {{4, 4, 8}, 0, {5, 1}}};
  const std::vector<toy_seq> second = {{{11}, 5, {3, 0}}, {{12, 13, 14, 15}, 3, {5, 1}}};
  m.reset_cache();
  run_reference(m, first);
  const auto ref = run_reference(m, second);
  for (auto isa : {cpu_isa::portable, cpu_isa::avx2, cpu_isa::avx512, cpu_isa::avx512_vnni}) {
    if (!can_run(isa)) continue;
    for (int threads : {1, 2, 3}) {
      forward_options o;
      o.kernels = &kernels_for(isa);
      o.num_threads = threads;
      m.reset_cache();
      run(m, first, o);
      const auto got = run(m, second, o);
      REQUIRE(got.size() == ref.size());
      // fp32 with other summation orders and another exp: rounding only, far below the
      // logits' spread (they are of order 1 to 10 here).
      for (std::size_t i = 0; i < ref.size(); ++i) {
        INFO(to_string(isa) << " threads " << threads << " logit " << i);
        CHECK(got[i] == Approx(ref[i]).epsilon(1e-4).margin(1e-4));
      }
    }
  }
}

}  // namespace

TEST_CASE("the fused pass of every kernel table equals the step-by-step kernels, biases, q/k norms and GQA included",
          "[kernels][forward]") {
  toy_model m(true);
  check_fused_equals_reference(m);
}


TEST_CASE("a mixture of experts' fused pass equals each token's experts one by one", "[kernels][forward][moe]") {
  SECTION("softmax, the chosen experts renormalised (Qwen3-MoE, Mixtral)") {
    toy_model m(toy_options{true, 6, 2, false, false, true});
    check_fused_equals_reference(m);
  }
  SECTION("softmax as it is, with a gated shared expert (Qwen2-MoE)") {
    toy_model m(toy_options{true, 5, 3, true, false, false});
    check_fused_equals_reference(m);
  }
  SECTION("sigmoid gates, every expert chosen") {
    toy_model m(toy_options{false, 4, 4, false, true, true});
    check_fused_equals_reference(m);
  }
}

TEST_CASE("a mixture's logits do not depend on the batch its tokens share experts with", "[kernels][forward][moe]") {
  toy_model m(toy_options{false, 6, 2, true, false, true});
  forward_options o;
  o.num_threads = 2;
  const toy_seq s{{3, 1, 4, 1, 5, 9}, 0, {6, 2}};
  m.reset_cache();
  const auto alone = run(m, {s}, o);
  m.reset_cache();
  const auto together = run(m, {{{2, 7}, 0, {0}}, s, {{8, 8, 8, 8, 8}, 0, {1, 4}}}, o);
  const std::size_t vocab = m.shape.vocab_size;
  for (std::size_t i = 0; i < alone.size(); ++i) {
    INFO("logit " << i);
    CHECK(together[2 * vocab + i] == Approx(alone[i]).epsilon(1e-5).margin(1e-5));
  }
}

TEST_CASE("route_experts keeps the k best gates, renormalised or not", "[kernels][moe]") {
  // Logits log(1), log(2), log(3), log(4): softmax gives 0.1, 0.2, 0.3, 0.4.
  const float logits[] = {std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f),
                          0.0f,           2.0f,           -1.0f,          2.0f};
  std::int32_t experts[4];
  float gates[4];
  route_experts(logits, 2, 4, 2, false, false, experts, gates);
  CHECK(experts[0] == 3);
  CHECK(experts[1] == 2);
  CHECK(gates[0] == Approx(0.4f));
  CHECK(gates[1] == Approx(0.3f));
  CHECK(experts[2] == 1);  // a tie goes to the lower expert
  CHECK(experts[3] == 3);
  CHECK(gates[2] == Approx(gates[3]));
  route_experts(logits, 1, 4, 2, false, true, experts, gates);
  CHECK(gates[0] == Approx(0.4f / 0.7f));
  CHECK(gates[1] == Approx(0.3f / 0.7f));
  route_experts(logits + 4, 1, 4, 3, true, false, experts, gates);
  CHECK(experts[0] == 1);
  CHECK(experts[2] == 0);
  CHECK(gates[0] == Approx(1.0f / (1.0f + std::exp(-2.0f))));
  CHECK(gates[2] == Approx(0.5f));
}

TEST_CASE("partial rotary dimensions, linear and YaRN scaling in the fused pass equal the reference",
          "[kernels][forward][rope]") {
  SECTION("8 of 12 dimensions rotated") {
    toy_options o;
    o.rope_dims = 8;
    toy_model m(o);
    check_fused_equals_reference(m);
  }
  SECTION("linear") {
    toy_options o;
    o.scaling = rope_scaling_kind::linear;
    toy_model m(o);
    check_fused_equals_reference(m);
  }
  SECTION("yarn, with its attention factor") {
    toy_options o;
    o.extras = true;
    o.scaling = rope_scaling_kind::yarn;
    toy_model m(o);
    check_fused_equals_reference(m);
  }
}

TEST_CASE("RoPE frequencies of linear and YaRN scaling, and partial rotation", "[kernels][rope]") {
  llama_shape s;
  s.head_dim = 64;
  s.rope_theta = 10000.0f;
  const auto plain = [&](int pair, int dims) { return std::pow(10000.0f, -2.0f * float(pair) / float(dims)); };
  s.rope_scaling = rope_scaling_kind::linear;
  s.rope_factor = 4.0f;
  for (int j : {0, 5, 31}) CHECK(rope_inv_freq(j, s) == Approx(plain(j, 64) / 4.0f));
  // YaRN over an original context of 4096: the band runs from the pair that turns 32
  // times over it to the one that turns once:
  //   pair(r) = 64 ln(4096 / (2 pi r)) / (2 ln 10000): pair(32) = 10.5 -> 10, pair(1) = 22.5 -> 23.
  s.rope_scaling = rope_scaling_kind::yarn;
  s.rope_original_max_position = 4096;
  for (int j : {0, 5, 10}) CHECK(rope_inv_freq(j, s) == Approx(plain(j, 64)));
  for (int j : {23, 28, 31}) CHECK(rope_inv_freq(j, s) == Approx(plain(j, 64) / 4.0f));
  // Pair 16 is 6/13 of the way: that share of the frequency is interpolated.
  const float ramp = 6.0f / 13.0f;
  CHECK(rope_inv_freq(16, s) == Approx(plain(16, 64) * (1.0f - ramp) + plain(16, 64) / 4.0f * ramp));
  // Partial rotation: frequencies over the rotated dimensions, the others left alone.
  s.rope_scaling = rope_scaling_kind::none;
  s.rope_dims = 16;
  s.rope_interleaved = false;
  CHECK(rope_inv_freq(3, s) == Approx(plain(3, 16)));
  s.num_heads = 1;
  s.num_kv_heads = 1;
  std::vector<float> q(64), k(64);
  for (int i = 0; i < 64; ++i) q[i] = k[i] = float(i + 1);
  const std::int32_t pos = 7;
  rope(q.data(), k.data(), &pos, 1, s);
  for (int i = 16; i < 64; ++i) CHECK(q[i] == float(i + 1));
  // Pair (0, 8) of the rotated half turned by angle 7.
  CHECK(q[0] == Approx(1.0f * std::cos(7.0f) - 9.0f * std::sin(7.0f)));
  CHECK(q[8] == Approx(1.0f * std::sin(7.0f) + 9.0f * std::cos(7.0f)));
}
