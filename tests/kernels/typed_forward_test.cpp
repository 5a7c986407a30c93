// The forward pass over typed weights and KV caches: close to the step-by-step
// reference over the dequantized weights, batch-invariant, and preparing each input
// once per input format.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/kernels/typed_model.hpp"

using namespace inflight::kernels::cpu;
using inflight::test::model_types;
using inflight::test::run_fused;
using inflight::test::run_reference;
using inflight::test::runnable_isas;
using inflight::test::step_seq;
using inflight::test::typed_model;

namespace {

// Q4_K_M-like: k-quants mixed with the 32-value types, every input format in use.
const model_types mixed = {weight_type::q4_0, weight_type::q8_0, weight_type::q5_0, weight_type::q8_0,
                           weight_type::q4_k, weight_type::q6_k, weight_type::q5_k, weight_type::q8_0,
                           weight_type::q6_k};
// Q3_K_M / Q2_K-like: the 2- and 3-bit k-quants beside q4_k and q6_k.
const model_types low_bits = {weight_type::q3_k, weight_type::q3_k, weight_type::q4_k, weight_type::q4_k,
                              weight_type::q3_k, weight_type::q3_k, weight_type::q2_k, weight_type::q3_k,
                              weight_type::q6_k};
// llama-quantize's MXFP4_MOE on gpt-oss: the MLP (there, its experts) in mxfp4, the rest q8_0.
const model_types mxfp4_mlp = {weight_type::q8_0,  weight_type::q8_0,  weight_type::q8_0,
                               weight_type::q8_0,  weight_type::mxfp4, weight_type::mxfp4,
                               weight_type::mxfp4, weight_type::q8_0,  weight_type::q8_0};

const std::vector<step_seq> first_step = {{{1, 5, 9, 2, 7}, 0, {3, 0}}, {{4, 4, 8}, 0, {5, 1}}};
const std::vector<step_seq> second_step = {{{11}, 5, {3, 0}}, {{12, 13, 14, 15}, 3, {5, 1}}};

/// Logits of the second of two steps (prefills, then a decode beside a prefill chunk).
std::vector<float> two_steps(typed_model& m, const forward_options& o) {
  m.reset_cache();
  llama_workspace ws;
  run_fused(m, first_step, o, ws);
  return run_fused(m, second_step, o, ws);
}

std::vector<float> two_reference_steps(typed_model& m) {
  m.reset_cache();
  run_reference(m, first_step);
  return run_reference(m, second_step);
}

/// |got - want| <= tolerance * max |want| for every logit.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  double scale = 0.0;
  for (float v : want) scale = std::max(scale, double(std::abs(v)));
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("logit " << i << " of " << want.size() << ", largest " << scale);
    REQUIRE(std::abs(double(got[i]) - want[i]) <= tolerance * scale);
  }
}

}  // namespace

TEST_CASE("a model of mixed quantized types: the fused pass is close to the reference over its dequantized weights",
          "[kernels][forward][quant]") {
  // The inputs of each product are rounded to 8 bits per value (bf16: 8 bits of
  // mantissa): about 0.4% of each product, a few percent of the logits' range over two
  // layers (up to 4% for the 2- and 3-bit mix, as for a model all in q6_k). A wrong scale
  // or level is off by far more.
  struct model_case {
    model_types types;
    double tolerance;
  };
  for (const auto& [types, tolerance] :
       {model_case{mixed, 0.03}, model_case{low_bits, 0.05}, model_case{mxfp4_mlp, 0.03},
        model_case{inflight::test::all_of(weight_type::f16), 1e-4},
        model_case{inflight::test::all_of(weight_type::bf16), 0.03}}) {
    typed_model m(types, kv_type::f32);
    const auto ref = two_reference_steps(m);
    for (auto isa : runnable_isas()) {
      forward_options o;
      o.kernels = &kernels_for(isa);
      o.num_threads = 2;
      INFO(to_string(isa) << " wq " << to_string(types.wq) << " w_up " << to_string(types.w_up));
      check_close(two_steps(m, o), ref, tolerance);
    }
  }
}

TEST_CASE("typed models give the same bits on 1, 2 or 3 threads, and a sequence the same bits alone or batched",
          "[kernels][forward][quant]") {
  for (auto kv : {kv_type::f32, kv_type::f16, kv_type::bf16}) {
    typed_model m(mixed, kv);
    for (auto isa : runnable_isas()) {
      forward_options o;
      o.kernels = &kernels_for(isa);
      o.num_threads = 1;
      const auto one = two_steps(m, o);
      INFO(to_string(isa) << " kv " << to_string(kv));
      for (int threads : {2, 3}) {
        o.num_threads = threads;
        const auto many = two_steps(m, o);
        CHECK(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)) == 0);
      }
      const step_seq s{{3, 1, 4, 1, 5, 9}, 0, {6, 2}};
      llama_workspace ws;
      m.reset_cache();
      const auto alone = run_fused(m, {s}, o, ws);
      m.reset_cache();
      const auto together = run_fused(m, {{{2, 7}, 0, {0}}, s, {{8, 8, 8, 8, 8}, 0, {1, 4}}}, o, ws);
      const std::size_t vocab = m.shape.vocab_size;
      CHECK(std::memcmp(together.data() + 2 * vocab, alone.data(), alone.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("f16 and bf16 KV caches: the fused pass is close to the reference over the same cache type",
          "[kernels][forward]") {
  for (auto kv : {kv_type::f16, kv_type::bf16}) {
    typed_model m(inflight::test::all_of(weight_type::f32), kv);
    const auto ref = two_reference_steps(m);
    for (auto isa : runnable_isas()) {
      forward_options o;
      o.kernels = &kernels_for(isa);
      o.num_threads = 2;
      INFO(to_string(isa) << " kv " << to_string(kv));
      // Float rounding of K and V may round the other way into the cache (2^-8 of a
      // value in bf16, 2^-11 in f16): a fraction of a percent of the logits' range.
      check_close(two_steps(m, o), ref, kv == kv_type::bf16 ? 0.01 : 2e-3);
    }
  }
}

TEST_CASE("each input is prepared once per input format, not once per matrix", "[kernels][forward][quant]") {
  typed_model m(mixed, kv_type::f32);
  const int n = 8, d = m.shape.dim, qd = m.shape.num_heads * m.shape.head_dim, h = m.shape.hidden_dim;
  const int layers = m.shape.num_layers;
  const std::vector<step_seq> step = {{{1, 2, 3, 4, 5}, 0, {0}}, {{6, 7, 8}, 0, {1}}};
  for (int threads : {1, 2}) {
    forward_options o;
    o.num_threads = threads;
    llama_workspace ws;
    m.reset_cache();
    run_fused(m, step, o, ws);
    INFO("threads " << threads);
    // q8_0: the attention input (read by wq, wk, wv) and the attention output (wo), per
    // layer, by each thread. q8_k: the FFN input (w_gate, w_up) by each thread, the SwiGLU
    // output (w_down) once in slices, and the final norm's rows (classifier) by each thread.
    CHECK(ws.num_prepared_values[int(input_format::q8_0)] == std::int64_t(threads) * layers * n * (d + qd));
    CHECK(ws.num_prepared_values[int(input_format::q8_k)] ==
          std::int64_t(layers) * n * (threads * d + h) + std::int64_t(threads) * n * d);
    CHECK(ws.num_prepared_values[int(input_format::bf16)] == 0);
  }
}
