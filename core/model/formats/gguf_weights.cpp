// The tensors of a GGUF model, by llama.cpp's names, into model_weights.
#include <set>

#include "core/model/formats/gguf_model.hpp"
#include "core/model/formats/layer_layout.hpp"
#include "core/model/model_family.hpp"

namespace inflight {

namespace {

/// A tensor the config implies: a matrix [rows x cols] (ne = {cols, rows}) or a vector.
/// A fused matrix (Phi-3's attn_qkv, ffn_up of gate and up) goes to `parts` instead, as
/// views of its consecutive rows.
struct gguf_request {
  std::string name;
  std::vector<std::int64_t> ne;
  weight_tensor* matrix = nullptr;
  std::vector<float>* values = nullptr;
  std::vector<std::pair<weight_tensor*, std::int64_t>> parts = {};  ///< (matrix, rows) in row order
};

std::string ne_string(const std::vector<std::int64_t>& ne) {
  std::string text = "[";
  for (std::size_t i = 0; i < ne.size(); ++i) text += (i ? ", " : "") + std::to_string(ne[i]);
  return text + "]";
}

/// A mixture's router, stacked experts and shared expert.
void add_experts(std::vector<gguf_request>& list, const model_config& c, const std::string& p, layer_weights& l) {
  const std::int64_t dim = c.dim, e = c.moe.num_experts, ff = c.moe.expert_hidden_dim;
  list.push_back({p + "ffn_gate_inp.weight", {dim, e}, &l.router, nullptr});
  list.push_back({p + "ffn_gate_exps.weight", {dim, ff, e}, &l.gate_exps, nullptr});
  list.push_back({p + "ffn_up_exps.weight", {dim, ff, e}, &l.up_exps, nullptr});
  list.push_back({p + "ffn_down_exps.weight", {ff, dim, e}, &l.down_exps, nullptr});
  if (c.expert_biases) {  // gpt-oss: each expert's rows of bias, stacked like its matrices
    list.push_back({p + "ffn_gate_inp.bias", {e}, nullptr, &l.router_bias});
    list.push_back({p + "ffn_gate_exps.bias", {ff, e}, nullptr, &l.gate_exps_bias});
    list.push_back({p + "ffn_up_exps.bias", {ff, e}, nullptr, &l.up_exps_bias});
    list.push_back({p + "ffn_down_exps.bias", {dim, e}, nullptr, &l.down_exps_bias});
  }
  if (c.moe.shared_hidden_dim > 0) {
    const std::int64_t shared = c.moe.shared_hidden_dim;
    list.push_back({p + "ffn_gate_inp_shexp.weight", {dim}, nullptr, &l.shared_expert_gate});
    list.push_back({p + "ffn_gate_shexp.weight", {dim, shared}, &l.w_gate, nullptr});
    list.push_back({p + "ffn_up_shexp.weight", {dim, shared}, &l.w_up, nullptr});
    list.push_back({p + "ffn_down_shexp.weight", {shared, dim}, &l.w_down, nullptr});
  }
}

void add_layer(std::vector<gguf_request>& list, const model_config& c, int i, layer_weights& l, bool fused_qkv) {
  const std::int64_t dim = c.dim, hidden = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  const std::string p = "blk." + std::to_string(i) + ".";
  list.push_back({p + "attn_norm.weight", {dim}, nullptr, &l.attn_norm});
  if (fused_qkv) {
    list.push_back({p + "attn_qkv.weight", {dim, q + 2 * kv}, nullptr, nullptr, {{&l.wq, q}, {&l.wk, kv}, {&l.wv, kv}}});
  } else {
    list.push_back({p + "attn_q.weight", {dim, q}, &l.wq, nullptr});
    list.push_back({p + "attn_k.weight", {dim, kv}, &l.wk, nullptr});
    list.push_back({p + "attn_v.weight", {dim, kv}, &l.wv, nullptr});
  }
  if (c.attention_bias) {
    list.push_back({p + "attn_q.bias", {q}, nullptr, &l.bq});
    list.push_back({p + "attn_k.bias", {kv}, nullptr, &l.bk});
    list.push_back({p + "attn_v.bias", {kv}, nullptr, &l.bv});
  }
  if (c.qk_norm) {
    list.push_back({p + "attn_q_norm.weight", {c.head_dim}, nullptr, &l.q_norm});
    list.push_back({p + "attn_k_norm.weight", {c.head_dim}, nullptr, &l.k_norm});
  }
  list.push_back({p + "attn_output.weight", {q, dim}, &l.wo, nullptr});
  if (c.output_bias) list.push_back({p + "attn_output.bias", {dim}, nullptr, &l.bo});
  if (c.attention_sinks) list.push_back({p + "attn_sinks.weight", {c.num_heads}, nullptr, &l.attn_sinks});
  if (c.post_norms) list.push_back({p + "post_attention_norm.weight", {dim}, nullptr, &l.post_attn_norm});
  list.push_back({p + gguf_ffn_norm_name(c), {dim}, nullptr, &l.ffn_norm});
  if (c.moe.enabled()) return add_experts(list, c, p, l);
  if (family_of(c).fused_projections) {  // ffn_up holds gate's rows, then up's
    list.push_back({p + "ffn_up.weight", {dim, 2 * hidden}, nullptr, nullptr, {{&l.w_gate, hidden}, {&l.w_up, hidden}}});
  } else {
    list.push_back({p + "ffn_gate.weight", {dim, hidden}, &l.w_gate, nullptr});
    list.push_back({p + "ffn_up.weight", {dim, hidden}, &l.w_up, nullptr});
  }
  list.push_back({p + "ffn_down.weight", {hidden, dim}, &l.w_down, nullptr});
  if (c.post_norms) list.push_back({p + "post_ffw_norm.weight", {dim}, nullptr, &l.post_ffn_norm});
}

std::vector<gguf_request> list_tensors(const gguf_file& file, const model_config& c, model_weights& w) {
  std::vector<gguf_request> list;
  list.push_back({"token_embd.weight", {c.dim, c.vocab_size}, &w.token_embedding, nullptr});
  for (int i = 0; i < c.num_layers; ++i) {
    // Phi-3's converter writes attn_qkv; llama.cpp takes separate q/k/v too.
    const bool fused_qkv = file.find_tensor("blk." + std::to_string(i) + ".attn_qkv.weight") != nullptr;
    add_layer(list, c, i, w.layers[std::size_t(i)], fused_qkv);
  }
  list.push_back({"output_norm.weight", {c.dim}, nullptr, &w.final_norm});
  if (!c.tied_embeddings) list.push_back({"output.weight", {c.dim, c.vocab_size}, &w.classifier, nullptr});
  return list;
}

result<void> load_tensor(const gguf_file& file, const gguf_request& request) {
  const gguf_tensor_info* info = file.find_tensor(request.name);
  if (info == nullptr) {
    return make_error(errc::not_found, "GGUF file '" + file.source() + "' lacks tensor '" + request.name +
                                           "' (expected ne " + ne_string(request.ne) + ")");
  }
  if (info->ne != request.ne) {
    return make_error(errc::corrupt_file, "GGUF file '" + file.source() + "': tensor '" + request.name + "' has ne " +
                                              ne_string(info->ne) + ", expected " + ne_string(request.ne));
  }
  if (request.matrix != nullptr || !request.parts.empty()) {
    auto matrix = file.try_matrix(*info);
    if (!matrix) return std::unexpected(matrix.error());
    if (request.matrix != nullptr) {
      *request.matrix = std::move(*matrix);
      return {};
    }
    std::int64_t first = 0;
    for (const auto& [part, rows] : request.parts) {
      auto view = matrix->try_rows(first, rows);
      if (!view) return std::unexpected(view.error());
      *part = std::move(*view);
      first += rows;
    }
    return {};
  }
  auto values = file.try_values_f32(*info);
  if (!values) return std::unexpected(values.error());
  *request.values = std::move(*values);
  return {};
}

}  // namespace

result<model_weights> try_load_gguf_weights(const gguf_file& file, const model_config& config) {
  // Each layer has at least 6 tensors (Phi-3's fused ones): a block count the file cannot
  // hold is refused before anything is sized by it.
  if (config.num_layers < 1 || std::size_t(config.num_layers) > file.tensors().size() / 6) {
    return make_error(errc::corrupt_file, "GGUF file '" + file.source() + "': block_count " +
                                              std::to_string(config.num_layers) + " but the file holds " +
                                              std::to_string(file.tensors().size()) + " tensors");
  }
  model_weights weights;
  weights.config = config;
  weights.layers.resize(std::size_t(config.num_layers));
  std::set<std::string, std::less<>> used;
  // llama's Llama-3 scaling factors went into config.scaling (try_read_gguf_config).
  if (family_of(config).gguf_architecture == "llama") used.insert("rope_freqs.weight");
  // phi3's LongRoPE factors went into config.scaling too.
  if (config.scaling.type == rope_scaling_type::longrope) {
    used.insert("rope_factors_long.weight");
    used.insert("rope_factors_short.weight");
  }
  for (const auto& request : list_tensors(file, config, weights)) {
    if (auto ok = load_tensor(file, request); !ok) return std::unexpected(ok.error());
    used.insert(request.name);
  }
  for (const auto& info : file.tensors()) {
    if (used.find(info.name) == used.end()) {
      return make_error(errc::unsupported, "GGUF file '" + file.source() + "': tensor '" + std::string(info.name) +
                                               "' is not used by inflight's " + config.architecture +
                                               " model; refusing to compute without it");
    }
  }
  return weights;
}

}  // namespace inflight
