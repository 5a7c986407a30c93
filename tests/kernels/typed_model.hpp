#pragma once
// A small random Llama with weights of chosen types (quantized by core's reference) and
// a paged KV cache of a chosen type, with runners for the fused forward pass and for
// the step-by-step reference over the dequantized weights.

#include <random>
#include <vector>

#include "kernels/cpu/llama.hpp"
#include "tests/kernels/quant_test_util.hpp"

namespace inflight::test {

/// The types of one model's matrices.
struct model_types {
  kc::weight_type wq, wk, wv, wo, w_gate, w_up, w_down, embedding, classifier;
};

inline model_types all_of(kc::weight_type t) { return {t, t, t, t, t, t, t, t, t}; }

struct typed_model {
  kc::llama_shape shape;
  std::vector<typed_matrix> matrices;         ///< every matrix, in its type
  std::vector<std::vector<float>> norms;
  std::vector<kc::llama_layer_view> layers, dense_layers;  ///< typed views; f32 views of the dequantized values
  kc::llama_weights_view weights, dense;
  kc::kv_type kv = kc::kv_type::f32;
  int num_blocks = 12, block_size = 16;
  std::vector<std::vector<std::byte>> k_cache, v_cache;
  std::vector<std::byte*> k_ptrs, v_ptrs;

  typed_model(const model_types& types, kc::kv_type kv_type);
  void reset_cache();
  kc::paged_kv_view kv_view() const { return {k_ptrs.data(), v_ptrs.data(), num_blocks, block_size, kv}; }
};

/// A sequence of a step: its tokens from position `start`, its blocks; every token sampled.
struct step_seq {
  std::vector<std::int32_t> tokens;
  int start = 0;
  std::vector<std::int32_t> blocks;
};


namespace {

/// The flattened ragged batch of a step, owning its arrays.
struct batch_arrays {
  std::vector<std::int32_t> ids, positions, slots, query_start{0}, tables, logit_indices;
  kc::ragged_batch_view view;

  batch_arrays(const std::vector<step_seq>& seqs, int block_size) {
    const int stride = 4;
    for (const auto& s : seqs) {
      for (std::size_t j = 0; j < s.tokens.size(); ++j) {
        const int pos = s.start + int(j);
        ids.push_back(s.tokens[j]);
        positions.push_back(pos);
        slots.push_back(s.blocks[pos / block_size] * block_size + pos % block_size);
        logit_indices.push_back(std::int32_t(ids.size()) - 1);
      }
      query_start.push_back(std::int32_t(ids.size()));
      auto row = s.blocks;
      row.resize(stride, 0);
      tables.insert(tables.end(), row.begin(), row.end());
    }
    view.num_tokens = int(ids.size());
    view.token_ids = ids.data();
    view.positions = positions.data();
    view.slot_mapping = slots.data();
    view.num_seqs = int(seqs.size());
    view.query_start = query_start.data();
    view.block_tables = tables.data();
    view.block_table_stride = stride;
    view.num_logits = int(logit_indices.size());
    view.logit_indices = logit_indices.data();
  }
};

}  // namespace

inline typed_model::typed_model(const model_types& t, kc::kv_type kv_type) : kv(kv_type) {
  shape.dim = 256;
  shape.hidden_dim = 512;
  shape.num_layers = 2;
  shape.num_heads = 4;
  shape.num_kv_heads = 2;
  shape.head_dim = 64;
  shape.vocab_size = 64;
  std::mt19937 rng(4);
  const int d = shape.dim, h = shape.hidden_dim, qd = 4 * 64, kvd = 2 * 64;
  matrices.reserve(64);
  norms.reserve(16);
  auto matrix = [&](kc::weight_type type, int rows, int cols, float scale) -> const typed_matrix& {
    return matrices.emplace_back(type, random_floats(std::size_t(rows) * cols, rng, scale), rows, cols);
  };
  auto norm = [&](int n) { return norms.emplace_back(random_floats(std::size_t(n), rng, 0.3f)).data(); };
  auto f32 = [](const typed_matrix& m) { return kc::f32_weights(m.values.data(), m.cols); };
  for (int l = 0; l < shape.num_layers; ++l) {
    kc::llama_layer_view v, dv;
    v.attn_norm = dv.attn_norm = norm(d);
    for (auto& x : norms.back()) x += 1.0f;
    v.ffn_norm = dv.ffn_norm = norm(d);
    for (auto& x : norms.back()) x += 1.0f;
    const auto& wq = matrix(t.wq, qd, d, 0.1f);
    const auto& wk = matrix(t.wk, kvd, d, 0.1f);
    const auto& wv = matrix(t.wv, kvd, d, 0.1f);
    const auto& wo = matrix(t.wo, d, qd, 0.1f);
    const auto& wg = matrix(t.w_gate, h, d, 0.1f);
    const auto& wu = matrix(t.w_up, h, d, 0.1f);
    const auto& wd = matrix(t.w_down, d, h, 0.1f);
    v.wq = wq.view(), v.wk = wk.view(), v.wv = wv.view(), v.wo = wo.view();
    v.w_gate = wg.view(), v.w_up = wu.view(), v.w_down = wd.view();
    dv.wq = f32(wq), dv.wk = f32(wk), dv.wv = f32(wv), dv.wo = f32(wo);
    dv.w_gate = f32(wg), dv.w_up = f32(wu), dv.w_down = f32(wd);
    layers.push_back(v);
    dense_layers.push_back(dv);
  }
  const auto& embedding = matrix(t.embedding, shape.vocab_size, d, 1.0f);
  const auto& classifier = matrix(t.classifier, shape.vocab_size, d, 0.3f);
  const float* final_norm = norm(d);
  for (auto& x : norms.back()) x += 1.0f;
  weights = {embedding.view(), layers.data(), final_norm, classifier.view()};
  dense = {f32(embedding), dense_layers.data(), final_norm, f32(classifier)};
  reset_cache();
}

inline void typed_model::reset_cache() {
  const std::size_t bytes = std::size_t(num_blocks) * block_size * shape.num_kv_heads * shape.head_dim *
                            std::size_t(kc::element_bytes(kv));
  k_cache.assign(std::size_t(shape.num_layers), std::vector<std::byte>(bytes));
  v_cache.assign(std::size_t(shape.num_layers), std::vector<std::byte>(bytes));
  k_ptrs.clear();
  v_ptrs.clear();
  for (int l = 0; l < shape.num_layers; ++l) {
    k_ptrs.push_back(k_cache[l].data());
    v_ptrs.push_back(v_cache[l].data());
  }
}

/// The fused pass over `seqs` (logits of every token); ws may be reused across calls.
inline std::vector<float> run_fused(typed_model& m, const std::vector<step_seq>& seqs, const kc::forward_options& options,
                             kc::llama_workspace& ws) {
  const batch_arrays b(seqs, m.block_size);
  std::vector<float> logits(std::size_t(b.view.num_logits) * m.shape.vocab_size);
  kc::llama_forward(m.shape, m.weights, m.kv_view(), b.view, ws, logits.data(), nullptr, options);
  return logits;
}

/// The step-by-step reference (plain loops and OpenBLAS) over the dequantized weights.
inline std::vector<float> run_reference(typed_model& m, const std::vector<step_seq>& seqs) {
  const batch_arrays ba(seqs, m.block_size);
  const auto& b = ba.view;
  const auto& sh = m.shape;
  const int n = b.num_tokens, d = sh.dim, qd = sh.num_heads * sh.head_dim, kvd = sh.num_kv_heads * sh.head_dim;
  std::vector<float> x(std::size_t(n) * d), xb(x.size()), q(std::size_t(n) * qd), k(std::size_t(n) * kvd),
      v(k.size()), attn(q.size()), proj(x.size()), hb(std::size_t(n) * sh.hidden_dim), hb2(hb.size());
  kc::embedding_gather(x.data(), kc::as_f32(m.dense.token_embedding), b.token_ids, n, d);
  for (int l = 0; l < sh.num_layers; ++l) {
    const auto& w = m.dense_layers[std::size_t(l)];
    kc::rmsnorm(xb.data(), x.data(), w.attn_norm, n, d, sh.norm_eps);
    kc::linear(q.data(), xb.data(), kc::as_f32(w.wq), nullptr, n, d, qd);
    kc::linear(k.data(), xb.data(), kc::as_f32(w.wk), nullptr, n, d, kvd);
    kc::linear(v.data(), xb.data(), kc::as_f32(w.wv), nullptr, n, d, kvd);
    kc::rope(q.data(), k.data(), b.positions, n, sh);
    kc::kv_write(m.k_ptrs[l], m.v_ptrs[l], m.kv, k.data(), v.data(), b.slot_mapping, n, kvd);
    kc::paged_attention(attn.data(), q.data(), m.k_ptrs[l], m.v_ptrs[l], m.kv, b, m.block_size, sh.num_heads,
                        sh.num_kv_heads, sh.head_dim);
    kc::linear(proj.data(), attn.data(), kc::as_f32(w.wo), nullptr, n, qd, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    kc::rmsnorm(xb.data(), x.data(), w.ffn_norm, n, d, sh.norm_eps);
    kc::linear(hb.data(), xb.data(), kc::as_f32(w.w_gate), nullptr, n, d, sh.hidden_dim);
    kc::linear(hb2.data(), xb.data(), kc::as_f32(w.w_up), nullptr, n, d, sh.hidden_dim);
    kc::silu_mul(hb.data(), hb2.data(), std::int64_t(hb.size()));
    kc::linear(proj.data(), hb.data(), kc::as_f32(w.w_down), nullptr, n, sh.hidden_dim, d);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  }
  kc::rmsnorm(xb.data(), x.data(), m.dense.final_norm, n, d, sh.norm_eps);
  std::vector<float> logits(std::size_t(n) * sh.vocab_size);
  kc::linear(logits.data(), xb.data(), kc::as_f32(m.dense.classifier), nullptr, n, d, sh.vocab_size);
  return logits;
}

}  // namespace inflight::test
