// inflight_kernel_bench --forward TYPE [--kv f16]: the forward pass on the bench-110M
// shape with random weights of TYPE (f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, or
// q4_k_m: llama-quantize's Q4_K_M mix for this shape), as llama-batched-bench measures
// llama.cpp: a 128-token prompt; decode of 1, 16 and 32 streams from a 128-token
// context (64 steps); a 2048-token prompt (chunks of 512) and decode at 2048.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/llama.hpp"
#include "tests/kernels/kernel_bench.hpp"

namespace inflight::bench {
namespace {

using kc::weight_type;

weight_type type_named(const std::string& name) {
  for (int t = 0; t < kc::num_weight_types; ++t) {
    if (name == inflight::to_string(weight_type(t))) return weight_type(t);
  }
  return weight_type::q4_k;  // q4_k_m: the mix below
}

struct bench_model {
  kc::llama_shape shape;
  std::vector<std::vector<std::byte>> storage;
  std::vector<float> ones;
  std::vector<kc::llama_layer_view> layers;
  kc::llama_weights_view weights;
  std::int64_t weight_bytes = 0;
  int block_size = 16, num_blocks = 0;
  kc::kv_type kv = kc::kv_type::f16;
  std::vector<std::vector<std::byte>> k, v;
  std::vector<std::byte*> k_ptrs, v_ptrs;

  kc::weight_view matrix(weight_type t, int rows, int cols, std::mt19937& rng) {
    storage.push_back(random_matrix(t, rows, cols, rng));
    weight_bytes += std::int64_t(storage.back().size());
    return {storage.back().data(), inflight::row_bytes(t, cols), t};
  }

  bench_model(const std::string& name, kc::kv_type kv_type, int blocks) : num_blocks(blocks), kv(kv_type) {
    shape = {768, 2048, 12, 12, 12, 64, 32000};
    std::mt19937 rng(1);
    ones.assign(2048, 1.0f);
    const bool is_mix = name == "q4_k_m";
    const weight_type base = type_named(name);
    storage.reserve(128);
    for (int l = 0; l < shape.num_layers; ++l) {
      // llama-quantize's Q4_K_M on this shape: attn_v and ffn_down in q6_k in these layers.
      const bool more_bits = is_mix && (l % 3 == 0 || l >= 10);
      const weight_type vd = more_bits ? weight_type::q6_k : base;
      kc::llama_layer_view lv;
      lv.attn_norm = lv.ffn_norm = ones.data();
      lv.wq = matrix(base, 768, 768, rng);
      lv.wk = matrix(base, 768, 768, rng);
      lv.wv = matrix(vd, 768, 768, rng);
      lv.wo = matrix(base, 768, 768, rng);
      lv.w_gate = matrix(base, 2048, 768, rng);
      lv.w_up = matrix(base, 2048, 768, rng);
      lv.w_down = matrix(vd, 768, 2048, rng);
      layers.push_back(lv);
    }
    // llama-quantize keeps the output matrix in q6_k for the 4-bit types.
    const bool is_4bit = is_mix || base == weight_type::q4_0;
    const auto embedding = matrix(base, 32000, 768, rng);
    weights = {embedding, layers.data(), ones.data(), matrix(is_4bit ? weight_type::q6_k : base, 32000, 768, rng)};
    const std::size_t bytes = std::size_t(num_blocks) * block_size * 768 * kc::element_bytes(kv);
    k.assign(12, std::vector<std::byte>(bytes));
    v.assign(12, std::vector<std::byte>(bytes));
    for (int l = 0; l < 12; ++l) k_ptrs.push_back(k[l].data()), v_ptrs.push_back(v[l].data());
  }
  kc::paged_kv_view kv_view() const { return {k_ptrs.data(), v_ptrs.data(), num_blocks, block_size, kv}; }
};

/// One step: for each stream s, `count` tokens from position `start` in its blocks
/// [s * stride, ...); the last token of each stream is sampled.
double step(bench_model& m, kc::llama_workspace& ws, const kc::forward_options& o, int streams, int start, int count,
            int stride) {
  std::vector<std::int32_t> ids, pos, slots, qs{0}, tables, logit_rows;
  const int table_width = (start + count + m.block_size - 1) / m.block_size;
  for (int s = 0; s < streams; ++s) {
    for (int j = 0; j < count; ++j) {
      const int p = start + j;
      ids.push_back((s * 7919 + p * 31) % 32000);
      pos.push_back(p);
      slots.push_back((s * stride + p / m.block_size) * m.block_size + p % m.block_size);
    }
    qs.push_back(std::int32_t(ids.size()));
    logit_rows.push_back(std::int32_t(ids.size()) - 1);
    for (int b = 0; b < table_width; ++b) tables.push_back(s * stride + b);
  }
  kc::ragged_batch_view b;
  b.num_tokens = int(ids.size());
  b.token_ids = ids.data();
  b.positions = pos.data();
  b.slot_mapping = slots.data();
  b.num_seqs = streams;
  b.query_start = qs.data();
  b.block_tables = tables.data();
  b.block_table_stride = table_width;
  b.num_logits = streams;
  b.logit_indices = logit_rows.data();
  std::vector<float> logits(std::size_t(streams) * 32000);
  const auto t0 = std::chrono::steady_clock::now();
  kc::llama_forward(m.shape, m.weights, m.kv_view(), b, ws, logits.data(), nullptr, o);
  return seconds_since(t0);
}

/// Prompt of `length` tokens in chunks; returns tokens/s.
double prompt_rate(bench_model& m, kc::llama_workspace& ws, const kc::forward_options& o, int length, int chunk) {
  double seconds = 0.0;
  for (int start = 0; start < length; start += chunk) seconds += step(m, ws, o, 1, start, std::min(chunk, length - start), 256);
  return length / seconds;
}

/// Decode of `streams` streams from `context` for `steps` steps; returns tokens/s.
double decode_rate(bench_model& m, kc::llama_workspace& ws, const kc::forward_options& o, int streams, int context,
                   int steps, int stride) {
  auto prefill = o;
  prefill.times = nullptr;  // stage times of the decode steps only
  for (int start = 0; start < context; start += 512) step(m, ws, prefill, streams, start, std::min(512, context - start), stride);
  double seconds = 0.0;
  for (int s = 0; s < steps; ++s) seconds += step(m, ws, o, streams, context + s, 1, stride);
  return streams * steps / seconds;
}

}  // namespace

int run_forward_bench(const options& o) {
  const kc::kv_type kv = o.kv == "f32" ? kc::kv_type::f32 : (o.kv == "bf16" ? kc::kv_type::bf16 : kc::kv_type::f16);
  bench_model m(o.forward, kv, 32 * 16 + 8);
  kc::forward_options fo;
  fo.num_threads = o.threads;
  if (!o.isa.empty()) {
    for (int i = 0; i < kc::num_cpu_isas; ++i) {
      if (o.isa == kc::to_string(kc::cpu_isa(i)) && kc::can_run(kc::cpu_isa(i))) fo.kernels = &kc::kernels_for(kc::cpu_isa(i));
    }
  }
  std::printf("forward %s: %.1f MB of weights, KV %s, kernels %s\n", o.forward.c_str(), m.weight_bytes / 1e6,
              kc::to_string(kv), kc::to_string(fo.kernels ? fo.kernels->isa : kc::detect_cpu_isa()));
  kc::llama_workspace ws;
  double best[6] = {};
  for (int r = 0; r < o.rounds; ++r) {
    const double rates[6] = {prompt_rate(m, ws, fo, 128, 128),   decode_rate(m, ws, fo, 1, 128, 64, 16),
                             decode_rate(m, ws, fo, 16, 128, 64, 16), decode_rate(m, ws, fo, 32, 128, 64, 16),
                             prompt_rate(m, ws, fo, 2048, 512),  decode_rate(m, ws, fo, 1, 2048, 32, 256)};
    for (int i = 0; i < 6; ++i) best[i] = std::max(best[i], rates[i]);
  }
  if (o.profile > 0) {  // where a one-stream decode step's time goes
    kc::stage_times times;
    fo.times = &times;
    const double rate = decode_rate(m, ws, fo, 1, o.profile, 32 * o.rounds, 256);
    std::printf("  decode 1: %.1f tok/s\n", rate);
    double total = 0.0;
    for (double t : times.seconds) total += t;
    for (int i = 0; i < kc::num_forward_stages; ++i) {
      std::printf("  %-12s %7.3f ms/step %5.1f%%\n", kc::to_string(kc::forward_stage(i)),
                  times.seconds[i] * 1e3 / times.num_steps, 100.0 * times.seconds[i] / total);
    }
    return 0;
  }
  std::printf("  prompt 128: %7.1f tok/s | decode 1: %6.1f  16: %6.1f  32: %6.1f tok/s | prompt 2048: %6.1f tok/s | "
              "decode at 2048: %6.1f tok/s (%.1f GB/s of weights)\n",
              best[0], best[1], best[2], best[3], best[4], best[5], best[1] * m.weight_bytes / 1e9);
  return 0;
}

}  // namespace inflight::bench
