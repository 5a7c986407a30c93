// The weights of a Hugging Face folder: every tensor its config implies, by the family's
// names, out of the safetensors files.
#include "core/model/formats/hf_model.hpp"

#include <initializer_list>

#include "core/base/text_file.hpp"
#include "core/model/formats/st_pooling.hpp"
#include "core/model/model_family.hpp"

namespace inflight {

namespace {

/// A tensor to load into a vector (norms, biases) or a matrix.
struct tensor_request {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float>* out = nullptr;
  weight_tensor* matrix = nullptr;

  tensor_request(std::string n, std::vector<std::int64_t> s, std::vector<float>* v)
      : name(std::move(n)), shape(std::move(s)), out(v) {}
  tensor_request(std::string n, std::vector<std::int64_t> s, weight_tensor* m)
      : name(std::move(n)), shape(std::move(s)), matrix(m) {}
  /// Experts: one tensor of `shape` per name, stacked into one matrix.
  std::vector<std::string> parts;
  /// A fused matrix (Phi-3's qkv_proj, gate_up_proj): its rows split into these, in order.
  std::vector<std::pair<weight_tensor*, std::int64_t>> splits;
};

/// The experts' tensors `prefix`E`suffix` for every expert E, stacked into `out`.
tensor_request stacked(const std::string& prefix, const std::string& suffix, int num_experts,
                       std::vector<std::int64_t> shape, weight_tensor* out) {
  tensor_request request(prefix + "*" + suffix, std::move(shape), out);
  for (int e = 0; e < num_experts; ++e) request.parts.push_back(prefix + std::to_string(e) + suffix);
  return request;
}

/// A mixture layer's router, experts and shared expert, by the family's names.
void add_experts(std::vector<tensor_request>& list, const model_config& c, const std::string& prefix,
                 layer_weights& layer) {
  const std::int64_t dim = c.dim, ff = c.moe.expert_hidden_dim;
  const int e = c.moe.num_experts;
  if (c.architecture == "MixtralForCausalLM") {
    const std::string moe = prefix + "block_sparse_moe.";
    list.push_back({moe + "gate.weight", {e, dim}, &layer.router});
    list.push_back(stacked(moe + "experts.", ".w1.weight", e, {ff, dim}, &layer.gate_exps));
    list.push_back(stacked(moe + "experts.", ".w3.weight", e, {ff, dim}, &layer.up_exps));
    list.push_back(stacked(moe + "experts.", ".w2.weight", e, {dim, ff}, &layer.down_exps));
    return;
  }
  const std::string mlp = prefix + "mlp.";
  list.push_back({mlp + "gate.weight", {e, dim}, &layer.router});
  list.push_back(stacked(mlp + "experts.", ".gate_proj.weight", e, {ff, dim}, &layer.gate_exps));
  list.push_back(stacked(mlp + "experts.", ".up_proj.weight", e, {ff, dim}, &layer.up_exps));
  list.push_back(stacked(mlp + "experts.", ".down_proj.weight", e, {dim, ff}, &layer.down_exps));
  if (c.moe.shared_hidden_dim > 0) {
    const std::int64_t shared = c.moe.shared_hidden_dim;
    list.push_back({mlp + "shared_expert_gate.weight", {1, dim}, &layer.shared_expert_gate});
    list.push_back({mlp + "shared_expert.gate_proj.weight", {shared, dim}, &layer.w_gate});
    list.push_back({mlp + "shared_expert.up_proj.weight", {shared, dim}, &layer.w_up});
    list.push_back({mlp + "shared_expert.down_proj.weight", {dim, shared}, &layer.w_down});
  }
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Every tensor the config implies, in checkpoint order, with its destination.
std::vector<tensor_request> list_tensors(const model_config& c, model_weights& w, const std::string& model) {
  const std::int64_t dim = c.dim, hidden = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  const bool fused = family_of(c).fused_projections;
  std::vector<tensor_request> list;
  list.push_back({model + "embed_tokens.weight", {c.vocab_size, dim}, &w.token_embedding});
  for (int i = 0; i < c.num_layers; ++i) {
    auto& layer = w.layers[std::size_t(i)];
    const std::string prefix = model + "layers." + std::to_string(i) + ".";
    list.push_back({prefix + "input_layernorm.weight", {dim}, &layer.attn_norm});
    if (fused) {
      tensor_request qkv(prefix + "self_attn.qkv_proj.weight", {q + 2 * kv, dim}, static_cast<weight_tensor*>(nullptr));
      qkv.splits = {{&layer.wq, q}, {&layer.wk, kv}, {&layer.wv, kv}};
      list.push_back(std::move(qkv));
    } else {
      list.push_back({prefix + "self_attn.q_proj.weight", {q, dim}, &layer.wq});
      list.push_back({prefix + "self_attn.k_proj.weight", {kv, dim}, &layer.wk});
      list.push_back({prefix + "self_attn.v_proj.weight", {kv, dim}, &layer.wv});
    }
    if (c.attention_bias) {
      list.push_back({prefix + "self_attn.q_proj.bias", {q}, &layer.bq});
      list.push_back({prefix + "self_attn.k_proj.bias", {kv}, &layer.bk});
      list.push_back({prefix + "self_attn.v_proj.bias", {kv}, &layer.bv});
    }
    if (c.qk_norm) {
      list.push_back({prefix + "self_attn.q_norm.weight", {c.head_dim}, &layer.q_norm});
      list.push_back({prefix + "self_attn.k_norm.weight", {c.head_dim}, &layer.k_norm});
    }
    list.push_back({prefix + "self_attn.o_proj.weight", {dim, q}, &layer.wo});
    if (c.post_norms) {  // Gemma 2 and 3: post_attention_layernorm norms the attention's output
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, &layer.post_attn_norm});
      list.push_back({prefix + "pre_feedforward_layernorm.weight", {dim}, &layer.ffn_norm});
      list.push_back({prefix + "post_feedforward_layernorm.weight", {dim}, &layer.post_ffn_norm});
    } else {
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, &layer.ffn_norm});
    }
    if (c.moe.enabled()) {
      add_experts(list, c, prefix, layer);
      continue;
    }
    if (fused) {
      tensor_request gate_up(prefix + "mlp.gate_up_proj.weight", {2 * hidden, dim}, static_cast<weight_tensor*>(nullptr));
      gate_up.splits = {{&layer.w_gate, hidden}, {&layer.w_up, hidden}};
      list.push_back(std::move(gate_up));
    } else {
      list.push_back({prefix + "mlp.gate_proj.weight", {hidden, dim}, &layer.w_gate});
      list.push_back({prefix + "mlp.up_proj.weight", {hidden, dim}, &layer.w_up});
    }
    list.push_back({prefix + "mlp.down_proj.weight", {dim, hidden}, &layer.w_down});
  }
  list.push_back({model + "norm.weight", {dim}, &w.final_norm});
  if (!c.tied_embeddings) list.push_back({"lm_head.weight", {c.vocab_size, dim}, &w.classifier});
  return list;
}

/// One tensor's values as fp32, its name and shape checked.
result<void> read_values(const tensor_store& store, const std::string& name, const std::vector<std::int64_t>& shape,
                         std::span<float> out) {
  const tensor_view* view = store.find(name);
  if (view == nullptr) {
    return make_error(errc::not_found, "model weights lack tensor '" + name + "' (expected shape " +
                                           shape_string(shape) + ")");
  }
  const std::string where = "tensor '" + name + "' in '" + store.file_of(name).string() + "'";
  if (view->shape != shape) {
    return make_error(errc::corrupt_file, where + " has shape " + shape_string(view->shape) + ", expected " +
                                              shape_string(shape));
  }
  if (auto ok = try_convert_to_f32(*view, out); !ok) return make_error(ok.error().code, where + ": " + ok.error().message);
  return {};
}

result<void> load_tensor(const tensor_store& store, const tensor_request& request) {
  std::int64_t count = 1;
  for (const auto n : request.shape) count *= n;
  const std::size_t num_parts = request.parts.empty() ? 1 : request.parts.size();
  std::vector<float> values(std::size_t(count) * num_parts);
  for (std::size_t i = 0; i < num_parts; ++i) {
    const auto& name = request.parts.empty() ? request.name : request.parts[i];
    const std::span<float> out(values.data() + i * std::size_t(count), std::size_t(count));
    if (auto ok = read_values(store, name, request.shape, out); !ok) return ok;
  }
  if (!request.splits.empty()) {
    const std::int64_t cols = request.shape[1];
    auto from = values.begin();
    for (const auto& [matrix, rows] : request.splits) {
      *matrix = weight_tensor::from_f32(std::vector<float>(from, from + rows * cols), rows, cols);
      from += rows * cols;
    }
  } else if (request.matrix != nullptr) {
    *request.matrix = weight_tensor::from_f32(std::move(values), request.shape[0] * std::int64_t(num_parts),
                                              request.shape.size() > 1 ? request.shape[1] : 1);
  } else {
    *request.out = std::move(values);
  }
  return {};
}

}  // namespace

result<model_weights> try_load_hf_weights(const tensor_store& store, const model_config& config) {
  if (auto ok = try_check_shape(config); !ok) return std::unexpected(ok.error());
  model_weights weights;
  weights.config = config;
  weights.layers.resize(std::size_t(config.num_layers));
  // A multimodal checkpoint's language model (Gemma 3's): its text decoder's tensors,
  // under the prefix its transformers version wrote.
  std::string model = "model.";
  for (const char* prefix : {"language_model.model.", "model.language_model."}) {
    if (store.find(std::string(prefix) + "embed_tokens.weight") != nullptr) model = prefix;
  }
  for (const auto& request : list_tensors(config, weights, model)) {
    if (auto ok = load_tensor(store, request); !ok) return std::unexpected(ok.error());
  }
  if (family_of(config).norm_offset) {  // Gemma's checkpoints hold w for a norm of 1 + w
    auto plus_one = [](std::vector<float>& v) {
      for (float& x : v) x += 1.0f;
    };
    for (auto& l : weights.layers) {
      for (auto* v : {&l.attn_norm, &l.ffn_norm, &l.post_attn_norm, &l.post_ffn_norm, &l.q_norm, &l.k_norm}) plus_one(*v);
    }
    plus_one(weights.final_norm);
  }
  return weights;
}

result<hf_model> try_load_hf_model(const std::filesystem::path& folder, file_load load) {
  const auto config_path = folder / "config.json";
  auto config_text = read_text_file(config_path);
  if (!config_text) return std::unexpected(config_text.error());
  auto config = try_parse_hf_config(*config_text, config_path.string());
  if (!config) return std::unexpected(config.error());
  auto ids = try_parse_generation_ids(*config_text, config_path.string(), config->vocab_size);
  if (!ids) return std::unexpected(ids.error());
  const auto generation_path = folder / "generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    auto text = read_text_file(generation_path);
    if (!text) return std::unexpected(text.error());
    auto overrides = try_parse_generation_ids(*text, generation_path.string(), config->vocab_size);
    if (!overrides) return std::unexpected(overrides.error());
    if (!overrides->eos_ids.empty()) ids->eos_ids = overrides->eos_ids;
    if (overrides->bos_id) ids->bos_id = overrides->bos_id;
  }
  auto store = tensor_store::try_open_folder(folder, load);
  if (!store) return std::unexpected(store.error());
  auto weights = try_load_hf_weights(*store, *config);
  if (!weights) return std::unexpected(weights.error());
  auto pooling = try_read_st_pooling(folder);
  if (!pooling) return std::unexpected(pooling.error());
  return hf_model{std::move(*weights), std::move(ids->eos_ids), ids->bos_id, std::move(*pooling)};
}

}  // namespace inflight
