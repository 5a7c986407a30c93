#include "core/model/model_family.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace inflight {
namespace {

constexpr model_family gemma{.name = "gemma", .gguf_architecture = "gemma", .hf_architecture = "GemmaForCausalLM",
                             .hf_alias = "",
                             .gguf_rope = rope_style::half, .activation = mlp_activation::gelu_tanh,
                             .norm_offset = true, .scale_embeddings = true};

constexpr model_family gemma2() {
  model_family f = gemma;
  f.name = f.gguf_architecture = "gemma2";
  f.hf_architecture = "Gemma2ForCausalLM";
  f.post_norms = true;
  f.attn_softcap = 50.0f;
  f.final_softcap = 30.0f;
  f.window_period = 2;
  return f;
}

constexpr model_family gemma3() {
  model_family f = gemma;
  f.name = f.gguf_architecture = "gemma3";
  f.hf_architecture = "Gemma3ForCausalLM";
  f.hf_alias = "Gemma3ForConditionalGeneration";  // its text decoder (the vision tower is not loaded)
  f.qk_norm = f.post_norms = true;
  f.window_period = 6;
  f.rope_local_theta = 10000.0f;
  return f;
}

constexpr model_family gpt_oss() {
  model_family f{.name = "gpt-oss", .gguf_architecture = "gpt-oss", .hf_architecture = "GptOssForCausalLM", .hf_alias = ""};
  f.gguf_rope = rope_style::half;
  f.attention_bias = f.moe = f.moe_normalize = true;  // softmax over the chosen experts' logits
  f.activation = mlp_activation::swiglu_oai;
  f.window_period = 2;
  f.sinks_and_biases = true;
  f.hf_loadable = false;
  return f;
}

constexpr std::array<model_family, 11> families{{
    {"llama", "llama", "LlamaForCausalLM", "MistralForCausalLM", rope_style::interleaved},
    {"qwen2", "qwen2", "Qwen2ForCausalLM", "", rope_style::half, true},
    {"qwen3", "qwen3", "Qwen3ForCausalLM", "", rope_style::half, false, true},
    {"mixtral", "llama", "MixtralForCausalLM", "", rope_style::interleaved, false, false, true, true},
    {"qwen2moe", "qwen2moe", "Qwen2MoeForCausalLM", "", rope_style::half, true, false, true, false, true},
    {"qwen3moe", "qwen3moe", "Qwen3MoeForCausalLM", "", rope_style::half, false, true, true, true},
    gemma,
    gemma2(),
    gemma3(),
    {.name = "phi3", .gguf_architecture = "phi3", .hf_architecture = "Phi3ForCausalLM", .hf_alias = "",
     .gguf_rope = rope_style::half,
     .fused_projections = true},
    gpt_oss(),
}};

}  // namespace

std::span<const model_family> model_families() { return families; }

const model_family* find_family(std::string_view name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const model_family* find_gguf_family(std::string_view architecture, bool has_experts) {
  for (const auto& f : families) {
    if (f.gguf_architecture != architecture) continue;
    if (architecture == "llama" && f.moe != has_experts) continue;  // Mixtral is "llama" with experts
    return &f;
  }
  return nullptr;
}

const model_family* find_hf_family(std::string_view architecture) {
  for (const auto& f : families) {
    if (f.hf_architecture == architecture || (!f.hf_alias.empty() && f.hf_alias == architecture)) return &f;
  }
  return nullptr;
}

const model_family& family_of(const model_config& config) {
  const model_family* f = find_hf_family(config.architecture);
  return f != nullptr ? *f : families[0];
}

std::string family_list(std::string_view model_family::*key) {
  std::string list;
  std::vector<std::string_view> seen;
  for (const auto& f : families) {
    const std::string_view name = f.*key;
    if (std::ranges::find(seen, name) != seen.end()) continue;
    seen.push_back(name);
    list += (list.empty() ? "" : ", ") + std::string(name);
  }
  return list;
}

void apply_layer_kinds(model_config& config, const model_family& family) {
  config.activation = family.activation;
  config.embedding_scale = family.scale_embeddings ? std::sqrt(float(config.dim)) : 1.0f;
  config.post_norms = family.post_norms;
  config.attn_softcap = family.attn_softcap;
  config.final_softcap = family.final_softcap;
  config.window_period = family.window_period;
  config.rope_local_theta = family.rope_local_theta;
  config.attention_sinks = config.output_bias = config.expert_biases = family.sinks_and_biases;
}

result<model_config> try_apply_family(model_config config, const model_family& family) {
  config.architecture = std::string(family.hf_architecture);
  config.attention_bias = family.attention_bias;
  config.qk_norm = family.qk_norm;
  if (family.name != "llama") config.rope = rope_style::half;
  apply_layer_kinds(config, family);
  if (!family.moe) {
    config.moe = {};
    return config;
  }
  if (config.moe.num_experts <= 0 || config.moe.experts_per_token <= 0 || config.moe.expert_hidden_dim <= 0) {
    return make_error(errc::invalid_argument, "family '" + std::string(family.name) +
                                                  "' needs the number of experts, experts per token and expert size");
  }
  if (family.name == "mixtral") config.hidden_dim = config.moe.expert_hidden_dim;  // its files name the experts' width so
  config.moe.normalize_weights = family.moe_normalize;
  config.moe.gating = moe_gating::softmax;
  if (!family.shared_expert) config.moe.shared_hidden_dim = 0;
  return config;
}

}  // namespace inflight
