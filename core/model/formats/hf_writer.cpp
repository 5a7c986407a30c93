#include "core/model/formats/hf_writer.hpp"

#include <deque>
#include <initializer_list>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/model/model_family.hpp"

namespace inflight {

namespace {

using ordered_json = nlohmann::ordered_json;

// dest_row(head, r) for both directions; `to_half` maps interleaved -> rotate_half.
result<std::vector<float>> permute_rows(std::span<const float> rows, int num_heads, int head_dim,
                                        int num_cols, bool to_half) {
  if (num_heads <= 0 || head_dim <= 0 || head_dim % 2 != 0 || num_cols <= 0 ||
      rows.size() != std::size_t(num_heads) * std::size_t(head_dim) * std::size_t(num_cols)) {
    return make_error(errc::invalid_argument, "cannot permute " + std::to_string(rows.size()) + " values as " +
                                                  std::to_string(num_heads) + " heads of " + std::to_string(head_dim) +
                                                  " rows of " + std::to_string(num_cols));
  }
  std::vector<float> out(rows.size());
  const std::size_t cols = std::size_t(num_cols);
  const int half = head_dim / 2;
  for (int head = 0; head < num_heads; ++head) {
    const std::size_t base = std::size_t(head) * std::size_t(head_dim);
    for (int i = 0; i < half; ++i) {
      const std::size_t pair[2] = {base + 2 * std::size_t(i), base + 2 * std::size_t(i) + 1};
      const std::size_t split[2] = {base + std::size_t(i), base + std::size_t(i + half)};
      for (int k = 0; k < 2; ++k) {
        const std::size_t from = to_half ? pair[k] : split[k];
        const std::size_t to = to_half ? split[k] : pair[k];
        std::copy_n(rows.begin() + std::ptrdiff_t(from * cols), cols, out.begin() + std::ptrdiff_t(to * cols));
      }
    }
  }
  return out;
}

// llama2.c checkpoints are Llama decoders; HF knows them by that name.
std::string hf_architecture_of(const model_config& config) {
  return config.architecture == "llama2.c" ? "LlamaForCausalLM" : config.architecture;
}

std::string model_type_of(const std::string& architecture) {
  if (architecture == "MistralForCausalLM") return "mistral";
  const model_family* family = find_hf_family(architecture);
  if (family == nullptr) return "llama";
  if (family->name == "gemma3") return "gemma3_text";  // Gemma3ForCausalLM's text-only config
  return std::string(family->name == "qwen2moe" ? "qwen2_moe" : family->name == "qwen3moe" ? "qwen3_moe" : family->name);
}

const char* torch_dtype_of(tensor_dtype dtype) {
  if (dtype == tensor_dtype::bf16) return "bfloat16";
  if (dtype == tensor_dtype::f16) return "float16";
  return "float32";
}

void put_ids(ordered_json& out, const generation_ids& ids) {
  if (ids.bos_id) out["bos_token_id"] = *ids.bos_id;
  if (ids.eos_ids.size() == 1) out["eos_token_id"] = ids.eos_ids.front();
  if (ids.eos_ids.size() > 1) out["eos_token_id"] = ids.eos_ids;
}

result<void> write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text << '\n';
  out.flush();
  if (!out) return make_error(errc::io_error, "cannot write '" + path.string() + "'");
  return {};
}

/// fp32 values of a matrix: its own when it is fp32, else decoded into `storage`.
result<std::span<const float>> f32_values(const weight_tensor& tensor, std::deque<std::vector<float>>& storage) {
  if (tensor.dtype() == weight_dtype::f32) return tensor.f32();
  auto values = try_to_f32(tensor);
  if (!values) return std::unexpected(values.error());
  storage.push_back(std::move(*values));
  return std::span<const float>(storage.back());
}

/// A mixture layer's tensors by the family's names, each expert its own tensor (rows of
/// the stacked matrices).
template <class Matrix>
void add_experts(std::vector<tensor_to_write>& list, const model_config& c, const std::string& prefix,
                 const layer_weights& layer, tensor_dtype dtype, Matrix&& matrix) {
  const std::int64_t dim = c.dim, ff = c.moe.expert_hidden_dim;
  const bool mixtral = c.architecture == "MixtralForCausalLM";
  const std::string moe = prefix + (mixtral ? "block_sparse_moe." : "mlp.");
  list.push_back({moe + "gate.weight", {c.moe.num_experts, dim}, matrix(layer.router), dtype});
  const std::span<const float> gate = matrix(layer.gate_exps), up = matrix(layer.up_exps), down = matrix(layer.down_exps);
  const auto expert = [](std::span<const float> all, int e, std::int64_t count) {
    return all.size() < std::size_t((e + 1) * count) ? std::span<const float>{} : all.subspan(std::size_t(e * count), std::size_t(count));
  };
  for (int e = 0; e < c.moe.num_experts; ++e) {
    const std::string p = moe + "experts." + std::to_string(e) + ".";
    list.push_back({p + (mixtral ? "w1.weight" : "gate_proj.weight"), {ff, dim}, expert(gate, e, ff * dim), dtype});
    list.push_back({p + (mixtral ? "w3.weight" : "up_proj.weight"), {ff, dim}, expert(up, e, ff * dim), dtype});
    list.push_back({p + (mixtral ? "w2.weight" : "down_proj.weight"), {dim, ff}, expert(down, e, ff * dim), dtype});
  }
  if (c.moe.shared_hidden_dim > 0) {
    const std::int64_t shared = c.moe.shared_hidden_dim;
    list.push_back({moe + "shared_expert_gate.weight", {1, dim}, layer.shared_expert_gate, dtype});
    list.push_back({moe + "shared_expert.gate_proj.weight", {shared, dim}, matrix(layer.w_gate), dtype});
    list.push_back({moe + "shared_expert.up_proj.weight", {shared, dim}, matrix(layer.w_up), dtype});
    list.push_back({moe + "shared_expert.down_proj.weight", {dim, shared}, matrix(layer.w_down), dtype});
  }
}

result<std::vector<tensor_to_write>> list_tensors(const model_weights& w, tensor_dtype dtype,
                                                  std::deque<std::vector<float>>& storage) {
  const auto& c = w.config;
  const std::int64_t dim = c.dim, hidden = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim();
  std::vector<tensor_to_write> list;
  std::optional<error> failure;
  const auto matrix = [&](const weight_tensor& t) -> std::span<const float> {
    auto values = f32_values(t, storage);
    if (!values && !failure) failure = values.error();
    return values.value_or(std::span<const float>{});
  };
  const model_family& family = family_of(c);
  // Gemma's checkpoints hold w for a norm of 1 + w.
  const auto norm = [&](const std::vector<float>& v) -> std::span<const float> {
    if (!family.norm_offset || v.empty()) return v;
    storage.emplace_back(v);
    for (float& x : storage.back()) x -= 1.0f;
    return storage.back();
  };
  // Phi-3's fused matrices: the parts' rows one after another.
  const auto fused = [&](std::initializer_list<const weight_tensor*> parts) -> std::span<const float> {
    std::vector<float> rows;
    for (const weight_tensor* part : parts) {
      const auto values = matrix(*part);
      rows.insert(rows.end(), values.begin(), values.end());
    }
    storage.push_back(std::move(rows));
    return storage.back();
  };
  list.push_back({"model.embed_tokens.weight", {c.vocab_size, dim}, matrix(w.token_embedding), dtype});
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const auto& layer = w.layers[i];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    list.push_back({prefix + "input_layernorm.weight", {dim}, norm(layer.attn_norm), dtype});
    if (family.fused_projections) {
      list.push_back({prefix + "self_attn.qkv_proj.weight", {q + 2 * kv, dim}, fused({&layer.wq, &layer.wk, &layer.wv}), dtype});
    } else {
      list.push_back({prefix + "self_attn.q_proj.weight", {q, dim}, matrix(layer.wq), dtype});
      list.push_back({prefix + "self_attn.k_proj.weight", {kv, dim}, matrix(layer.wk), dtype});
      list.push_back({prefix + "self_attn.v_proj.weight", {kv, dim}, matrix(layer.wv), dtype});
    }
    if (c.attention_bias) {
      list.push_back({prefix + "self_attn.q_proj.bias", {q}, layer.bq, dtype});
      list.push_back({prefix + "self_attn.k_proj.bias", {kv}, layer.bk, dtype});
      list.push_back({prefix + "self_attn.v_proj.bias", {kv}, layer.bv, dtype});
    }
    if (c.qk_norm) {
      list.push_back({prefix + "self_attn.q_norm.weight", {c.head_dim}, norm(layer.q_norm), dtype});
      list.push_back({prefix + "self_attn.k_norm.weight", {c.head_dim}, norm(layer.k_norm), dtype});
    }
    list.push_back({prefix + "self_attn.o_proj.weight", {dim, q}, matrix(layer.wo), dtype});
    if (c.post_norms) {
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, norm(layer.post_attn_norm), dtype});
      list.push_back({prefix + "pre_feedforward_layernorm.weight", {dim}, norm(layer.ffn_norm), dtype});
      list.push_back({prefix + "post_feedforward_layernorm.weight", {dim}, norm(layer.post_ffn_norm), dtype});
    } else {
      list.push_back({prefix + "post_attention_layernorm.weight", {dim}, norm(layer.ffn_norm), dtype});
    }
    if (c.moe.enabled()) {
      add_experts(list, c, prefix, layer, dtype, matrix);
      continue;
    }
    if (family.fused_projections) {
      list.push_back({prefix + "mlp.gate_up_proj.weight", {2 * hidden, dim}, fused({&layer.w_gate, &layer.w_up}), dtype});
    } else {
      list.push_back({prefix + "mlp.gate_proj.weight", {hidden, dim}, matrix(layer.w_gate), dtype});
      list.push_back({prefix + "mlp.up_proj.weight", {hidden, dim}, matrix(layer.w_up), dtype});
    }
    list.push_back({prefix + "mlp.down_proj.weight", {dim, hidden}, matrix(layer.w_down), dtype});
  }
  list.push_back({"model.norm.weight", {dim}, norm(w.final_norm), dtype});
  if (!c.tied_embeddings) list.push_back({"lm_head.weight", {c.vocab_size, dim}, matrix(w.classifier), dtype});
  if (failure) return std::unexpected(*failure);
  return list;
}

// Repoints the q/k weights and biases at rotate_half-ordered copies held by `storage`.
result<void> permute_qk_tensors(const model_config& c, std::vector<tensor_to_write>& tensors,
                                std::deque<std::vector<float>>& storage) {
  for (auto& tensor : tensors) {
    const auto ends_with = [&](std::string_view suffix) { return tensor.name.ends_with(suffix); };
    const bool is_q = ends_with(".q_proj.weight") || ends_with(".q_proj.bias");
    const bool is_k = ends_with(".k_proj.weight") || ends_with(".k_proj.bias");
    // A per-head norm weight is one head's worth of rows, shared by every head.
    const bool is_norm = ends_with(".q_norm.weight") || ends_with(".k_norm.weight");
    if (!is_q && !is_k && !is_norm) continue;
    const int num_cols = tensor.shape.size() == 2 ? int(tensor.shape[1]) : 1;
    const int num_heads = is_norm ? 1 : is_q ? c.num_heads : c.num_kv_heads;
    auto rows = permute_for_half_rope(tensor.values, num_heads, c.head_dim, num_cols);
    if (!rows) return make_error(errc::invalid_argument, "tensor '" + tensor.name + "': " + rows.error().message);
    storage.push_back(std::move(*rows));
    tensor.values = storage.back();
  }
  return {};
}

result<void> check_writable(const model_weights& weights, tensor_dtype dtype) {
  const auto& c = weights.config;
  if (dtype != tensor_dtype::f32 && dtype != tensor_dtype::bf16 && dtype != tensor_dtype::f16) {
    return make_error(errc::invalid_argument, std::string("cannot write model weights as ") + to_string(dtype));
  }
  const model_family* family = find_hf_family(hf_architecture_of(c));
  if (family == nullptr || !family->hf_loadable) {
    return make_error(errc::invalid_argument, "cannot write architecture '" + c.architecture + "' as a Hugging Face folder");
  }
  if (family->moe != c.moe.enabled()) {
    return make_error(errc::invalid_argument, c.architecture + (family->moe ? " needs" : " has no") + " experts");
  }
  if (c.rope == rope_style::interleaved && c.rope_dims != 0) {
    return make_error(errc::invalid_argument, "partial rotary dimensions in interleaved order are not written");
  }
  if (c.architecture == "Qwen2ForCausalLM" && !c.attention_bias) {
    return make_error(errc::invalid_argument, "Qwen2ForCausalLM always has attention biases");
  }
  if (c.sliding_window > 0 && c.window_period > 0 && family->window_period == 0) {
    return make_error(errc::invalid_argument, c.architecture + " has no interleaved sliding-window layers");
  }
  if (c.post_norms != family->post_norms || (c.activation == mlp_activation::gelu_tanh) != family->norm_offset) {
    return make_error(errc::invalid_argument, c.architecture + "'s norms and activation are its family's");
  }
  if (family->qk_norm != c.qk_norm) {
    return make_error(errc::invalid_argument, "q/k norms are written only for the families that always have them "
                                              "(Qwen3, Qwen3-MoE, Gemma 3)");
  }
  if (auto ok = try_check_shape(c); !ok) return ok;
  if (weights.layers.size() != std::size_t(c.num_layers)) {
    return make_error(errc::invalid_argument, "weights have " + std::to_string(weights.layers.size()) +
                                                  " layers, config says " + std::to_string(c.num_layers));
  }
  return {};
}

}  // namespace

result<std::vector<float>> permute_for_half_rope(std::span<const float> rows, int num_heads, int head_dim,
                                                 int num_cols) {
  return permute_rows(rows, num_heads, head_dim, num_cols, true);
}

result<std::vector<float>> permute_for_interleaved_rope(std::span<const float> rows, int num_heads,
                                                        int head_dim, int num_cols) {
  return permute_rows(rows, num_heads, head_dim, num_cols, false);
}

result<model_weights> to_half_rope(const model_weights& weights) {
  model_weights out = weights;
  out.config.rope = rope_style::half;
  if (weights.config.rope == rope_style::half) return out;
  const auto& c = weights.config;
  const auto permute = [&](std::vector<float>& rows, int num_heads, int num_cols) -> result<void> {
    if (rows.empty() && num_cols == 1) return {};  // no bias or q/k norm
    auto permuted = permute_for_half_rope(rows, num_heads, c.head_dim, num_cols);
    if (!permuted) return std::unexpected(permuted.error());
    rows = std::move(*permuted);
    return {};
  };
  // Matrices are permuted as fp32 (a quantized one comes back as fp32).
  const auto permute_matrix = [&](weight_tensor& m, int num_heads) -> result<void> {
    auto values = try_to_f32(m);
    if (!values) return std::unexpected(values.error());
    const auto rows = m.rows(), cols = m.cols();
    if (auto ok = permute(*values, num_heads, int(cols)); !ok) return ok;
    m = weight_tensor::from_f32(std::move(*values), rows, cols);
    return {};
  };
  for (auto& layer : out.layers) {
    for (auto ok : {permute_matrix(layer.wq, c.num_heads), permute_matrix(layer.wk, c.num_kv_heads),
                    permute(layer.bq, c.num_heads, 1), permute(layer.bk, c.num_kv_heads, 1),
                    permute(layer.q_norm, 1, 1), permute(layer.k_norm, 1, 1)}) {
      if (!ok) return std::unexpected(ok.error());
    }
  }
  return out;
}

std::string hf_config_json(const model_config& c, tensor_dtype dtype, const generation_ids& ids) {
  ordered_json config;
  config["architectures"] = {hf_architecture_of(c)};
  config["model_type"] = model_type_of(hf_architecture_of(c));
  config["hidden_size"] = c.dim;
  config["intermediate_size"] = c.hidden_dim;
  if (c.moe.enabled()) {
    if (c.architecture == "MixtralForCausalLM") {
      config["num_local_experts"] = c.moe.num_experts;
    } else {
      config["num_experts"] = c.moe.num_experts;
      config["moe_intermediate_size"] = c.moe.expert_hidden_dim;
      config["norm_topk_prob"] = c.moe.normalize_weights;
      config["decoder_sparse_step"] = 1;
      config["mlp_only_layers"] = ordered_json::array();
    }
    config["num_experts_per_tok"] = c.moe.experts_per_token;
    if (c.moe.shared_hidden_dim > 0) config["shared_expert_intermediate_size"] = c.moe.shared_hidden_dim;
  }
  config["num_hidden_layers"] = c.num_layers;
  config["num_attention_heads"] = c.num_heads;
  config["num_key_value_heads"] = c.num_kv_heads;
  config["head_dim"] = c.head_dim;
  const model_family& family = family_of(c);
  if (c.activation == mlp_activation::gelu_tanh) {
    config["hidden_activation"] = "gelu_pytorch_tanh";
    config["query_pre_attn_scalar"] =
        c.attention_scale > 0.0f ? 1.0f / (c.attention_scale * c.attention_scale) : float(c.head_dim);
    config["attn_logit_softcapping"] = c.attn_softcap > 0.0f ? ordered_json(c.attn_softcap) : ordered_json(nullptr);
    config["final_logit_softcapping"] = c.final_softcap > 0.0f ? ordered_json(c.final_softcap) : ordered_json(nullptr);
  } else {
    config["hidden_act"] = "silu";
  }
  config["max_position_embeddings"] = c.max_seq_len;
  config["rms_norm_eps"] = c.norm_eps;
  config["rope_theta"] = c.rope_theta;
  config["rope_scaling"] = nullptr;
  if (c.scaling.type == rope_scaling_type::llama3) {
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", c.scaling.factor},
                              {"low_freq_factor", c.scaling.low_freq_factor},
                              {"high_freq_factor", c.scaling.high_freq_factor},
                              {"original_max_position_embeddings", c.scaling.original_max_position}};
  } else if (c.scaling.type == rope_scaling_type::linear) {
    config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.scaling.factor}};
  } else if (c.scaling.type == rope_scaling_type::yarn) {
    config["rope_scaling"] = {{"rope_type", "yarn"},
                              {"factor", c.scaling.factor},
                              {"original_max_position_embeddings", c.scaling.original_max_position},
                              {"beta_fast", c.scaling.beta_fast},
                              {"beta_slow", c.scaling.beta_slow}};
    if (c.scaling.attention_factor != 0.0f) config["rope_scaling"]["attention_factor"] = c.scaling.attention_factor;
  } else if (c.scaling.type == rope_scaling_type::longrope) {
    config["rope_scaling"] = {{"type", "longrope"}, {"short_factor", c.scaling.short_factor},
                              {"long_factor", c.scaling.long_factor}};
    if (c.scaling.attention_factor != 0.0f) config["rope_scaling"]["attention_factor"] = c.scaling.attention_factor;
    config["original_max_position_embeddings"] = c.scaling.original_max_position;
  }
  if (c.rope_dims != 0) config["partial_rotary_factor"] = float(c.rope_dims) / float(c.head_dim);
  config["attention_bias"] = c.attention_bias;
  config["sliding_window"] = c.sliding_window > 0 ? ordered_json(c.sliding_window) : ordered_json(nullptr);
  if (c.sliding_window > 0 && family.window_period > 0) {
    ordered_json types = ordered_json::array();
    for (int l = 0; l < c.num_layers; ++l) types.push_back(c.layer_windowed(l) ? "sliding_attention" : "full_attention");
    config["layer_types"] = types;
    config["sliding_window_pattern"] = c.window_period;
    if (c.rope_local_theta > 0.0f) config["rope_local_base_freq"] = c.rope_local_theta;
  }
  config["tie_word_embeddings"] = c.tied_embeddings;
  config["vocab_size"] = c.vocab_size;
  config["torch_dtype"] = torch_dtype_of(dtype);
  put_ids(config, ids);
  return config.dump(2);
}

result<void> write_hf_model_folder(const model_weights& weights, const std::filesystem::path& folder,
                                   tensor_dtype dtype, const generation_ids& ids) {
  if (auto ok = check_writable(weights, dtype); !ok) return ok;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return make_error(errc::io_error, "cannot create '" + folder.string() + "': " + ec.message());
  // A stale index would take precedence over the single file written here.
  std::filesystem::remove(folder / "model.safetensors.index.json", ec);

  std::deque<std::vector<float>> storage;  // decoded or permuted copies the tensors point at
  auto tensors = list_tensors(weights, dtype, storage);
  if (!tensors) return std::unexpected(tensors.error());
  // Only q/k rows move for an interleaved model: permute those, not a copy of the model.
  if (weights.config.rope == rope_style::interleaved) {
    if (auto ok = permute_qk_tensors(weights.config, *tensors, storage); !ok) return ok;
  }
  model_config written = weights.config;
  written.rope = rope_style::half;
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  if (auto ok = try_write_safetensors(folder / "model.safetensors", *tensors, metadata); !ok) return ok;
  if (auto ok = write_text(folder / "config.json", hf_config_json(written, dtype, ids)); !ok) return ok;
  if (ids.eos_ids.empty() && !ids.bos_id) {
    std::filesystem::remove(folder / "generation_config.json", ec);
    return {};
  }
  ordered_json generation;
  put_ids(generation, ids);
  return write_text(folder / "generation_config.json", generation.dump(2));
}

}  // namespace inflight
