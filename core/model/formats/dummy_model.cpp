#include "core/model/formats/dummy_model.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <thread>
#include <vector>

#include "core/model/formats/hf_model.hpp"

namespace inflight {

namespace {

constexpr std::size_t chunk_size = std::size_t(1) << 16;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One chunk: its own stream, derived from (seed, tensor, chunk), so threads can fill
// chunks in any order and the result does not change.
void fill_normal_chunk(float* out, std::size_t count, std::uint64_t seed, std::size_t tensor,
                       std::size_t chunk) {
  std::uint64_t state = seed;
  state = splitmix64(state) ^ (std::uint64_t(tensor) * 0xd1b54a32d192ed03ull);
  state = splitmix64(state) ^ (std::uint64_t(chunk) * 0x8cb92ba72f3d8dd7ull);
  constexpr double two_pi = 6.283185307179586;
  for (std::size_t i = 0; i < count; i += 2) {
    // Box-Muller on 53-bit uniforms; u1 in (0, 1] keeps the log finite.
    const double u1 = double((splitmix64(state) >> 11) + 1) * 0x1p-53;
    const double u2 = double(splitmix64(state) >> 11) * 0x1p-53;
    const double radius = std::sqrt(-2.0 * std::log(u1)) * dummy_weight_std;
    out[i] = float(radius * std::cos(two_pi * u2));
    if (i + 1 < count) out[i + 1] = float(radius * std::sin(two_pi * u2));
  }
}

struct fill_job {
  std::vector<float>* values;
  std::size_t tensor;
  std::size_t chunk;
};

void run_jobs(const std::vector<fill_job>& jobs, std::uint64_t seed) {
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t j = next++; j < jobs.size(); j = next++) {
      const auto& job = jobs[j];
      const std::size_t begin = job.chunk * chunk_size;
      const std::size_t count = std::min(chunk_size, job.values->size() - begin);
      fill_normal_chunk(job.values->data() + begin, count, seed, job.tensor, job.chunk);
    }
  };
  const std::size_t num_threads =
      std::min<std::size_t>({std::max(1u, std::thread::hardware_concurrency()), 16, jobs.size() / 16 + 1});
  std::vector<std::jthread> threads;
  for (std::size_t t = 1; t < num_threads; ++t) threads.emplace_back(work);
  work();
}

}  // namespace

namespace {

/// One random tensor in creation order (its index seeds its stream): a matrix, or a bias.
struct random_tensor {
  weight_tensor* matrix = nullptr;
  std::vector<float>* bias = nullptr;
  std::int64_t rows = 0, cols = 0;
  matrix_role role = matrix_role::wq;
  int layer = 0;
  bool keep_f32 = false;  ///< never quantized (a router)
};

/// Fills one tensor (in parallel over its chunks) and stores it, converted when asked.
result<void> make_tensor(const random_tensor& r, std::size_t index, std::uint64_t seed, const quant_recipe* recipe,
                         const model_config& config) {
  std::vector<float> values;
  try {
    values.resize(r.bias ? r.bias->size() : std::size_t(r.rows * r.cols));
  } catch (const std::bad_alloc&) {
    return make_error(errc::out_of_memory, "not enough memory for dummy weights of " +
                                               std::to_string(config.num_parameters()) + " parameters");
  }
  std::vector<fill_job> jobs;
  for (std::size_t c = 0; c * chunk_size < values.size(); ++c) jobs.push_back({&values, index, c});
  run_jobs(jobs, seed);
  if (r.bias) {
    *r.bias = std::move(values);
    return {};
  }
  *r.matrix = weight_tensor::from_f32(std::move(values), r.rows, r.cols);
  if (!recipe || r.keep_f32) return {};
  const auto to = fallback_for(dtype_for(*recipe, r.role, r.layer, config.num_layers, config.tied_embeddings), r.cols);
  if (to == weight_dtype::f32) return {};
  auto converted = try_convert(*r.matrix, to);
  if (!converted) return std::unexpected(converted.error());
  *r.matrix = std::move(*converted);
  return {};
}

}  // namespace

result<model_weights> make_dummy_weights(const model_config& config, std::uint64_t seed, const quant_recipe* recipe) {
  if (auto ok = try_check_shape(config); !ok) return std::unexpected(ok.error());
  const std::int64_t dim = config.dim;
  const std::int64_t q = config.q_dim(), kv = config.kv_dim(), vocab = config.vocab_size;
  model_weights w;
  w.config = config;
  std::vector<random_tensor> order;  // the order fixes each tensor's random stream
  const auto matrix = [&](weight_tensor& out, std::int64_t rows, std::int64_t cols, matrix_role role, int layer) {
    order.push_back({&out, nullptr, rows, cols, role, layer});
  };
  matrix(w.token_embedding, vocab, dim, matrix_role::token_embedding, 0);
  w.layers.resize(std::size_t(config.num_layers));
  for (int i = 0; i < config.num_layers; ++i) {
    auto& layer = w.layers[std::size_t(i)];
    layer.attn_norm.assign(std::size_t(dim), 1.0f);
    layer.ffn_norm.assign(std::size_t(dim), 1.0f);
    if (config.post_norms) {
      layer.post_attn_norm.assign(std::size_t(dim), 1.0f);
      layer.post_ffn_norm.assign(std::size_t(dim), 1.0f);
    }
    matrix(layer.wq, q, dim, matrix_role::wq, i);
    matrix(layer.wk, kv, dim, matrix_role::wk, i);
    matrix(layer.wv, kv, dim, matrix_role::wv, i);
    matrix(layer.wo, dim, q, matrix_role::wo, i);
    const std::int64_t dense = config.dense_hidden_dim();  // a mixture's shared expert, or none
    if (config.moe.enabled()) {
      const std::int64_t e = config.moe.num_experts, ff = config.moe.expert_hidden_dim;
      order.push_back({&layer.router, nullptr, e, dim, matrix_role::wq, i});  // kept f32, as llama-quantize keeps it
      order.back().keep_f32 = true;
      matrix(layer.gate_exps, e * ff, dim, matrix_role::w_gate, i);
      matrix(layer.up_exps, e * ff, dim, matrix_role::w_up, i);
      matrix(layer.down_exps, e * dim, ff, matrix_role::w_down, i);
      if (dense > 0) {
        layer.shared_expert_gate.resize(std::size_t(dim));
        order.push_back({nullptr, &layer.shared_expert_gate});
      }
    }
    if (dense > 0) {
      matrix(layer.w_gate, dense, dim, matrix_role::w_gate, i);
      matrix(layer.w_up, dense, dim, matrix_role::w_up, i);
      matrix(layer.w_down, dim, dense, matrix_role::w_down, i);
    }
    if (config.qk_norm) {
      layer.q_norm.assign(std::size_t(config.head_dim), 1.0f);
      layer.k_norm.assign(std::size_t(config.head_dim), 1.0f);
    }
    if (config.attention_bias) {
      layer.bq.resize(std::size_t(q));
      layer.bk.resize(std::size_t(kv));
      layer.bv.resize(std::size_t(kv));
      for (auto* b : {&layer.bq, &layer.bk, &layer.bv}) order.push_back({nullptr, b});
    }
    // gpt-oss: sinks, the output bias, the router's and experts' biases (random, like the others).
    const auto random_vector = [&](std::vector<float>& v, std::int64_t n) {
      v.resize(std::size_t(n));
      order.push_back({nullptr, &v});
    };
    if (config.attention_sinks) random_vector(layer.attn_sinks, config.num_heads);
    if (config.output_bias) random_vector(layer.bo, dim);
    if (config.expert_biases && config.moe.enabled()) {
      const std::int64_t e = config.moe.num_experts, ff = config.moe.expert_hidden_dim;
      random_vector(layer.router_bias, e);
      random_vector(layer.gate_exps_bias, e * ff);
      random_vector(layer.up_exps_bias, e * ff);
      random_vector(layer.down_exps_bias, e * dim);
    }
  }
  w.final_norm.assign(std::size_t(dim), 1.0f);
  if (!config.tied_embeddings) matrix(w.classifier, vocab, dim, matrix_role::classifier, config.num_layers - 1);
  for (std::size_t t = 0; t < order.size(); ++t) {
    if (auto ok = make_tensor(order[t], t, seed, recipe, config); !ok) return std::unexpected(ok.error());
  }
  return w;
}

}  // namespace inflight
