#include "core/model/formats/shapes.hpp"

#include <algorithm>

#include "core/model/model_family.hpp"

namespace inflight {
namespace {

model_config llama2c_shape(int dim, int hidden, int layers, int heads) {
  model_config c;
  c.architecture = "llama2.c";
  c.dim = dim;
  c.hidden_dim = hidden;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = heads;
  c.head_dim = dim / heads;
  c.vocab_size = 32000;
  c.max_seq_len = 2048;
  c.rope = rope_style::interleaved;
  c.tied_embeddings = true;
  return c;
}

model_config llama3_shape(int dim, int hidden, int layers, int head_dim, bool tied) {
  model_config c;
  c.architecture = "LlamaForCausalLM";
  c.dim = dim;
  c.hidden_dim = hidden;
  c.num_layers = layers;
  c.num_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = head_dim;
  c.vocab_size = 128256;
  c.max_seq_len = 131072;
  c.rope_theta = 500000.0f;
  c.rope = rope_style::half;
  c.scaling.type = rope_scaling_type::llama3;
  c.scaling.factor = tied ? 32.0f : 8.0f;
  c.scaling.low_freq_factor = 1.0f;
  c.scaling.high_freq_factor = 4.0f;
  c.scaling.original_max_position = 8192;
  c.tied_embeddings = tied;
  return c;
}

// Qwen3-Reranker-0.6B (and Qwen3-0.6B): explicit head_dim 128 over 16 heads of a 1024 model.
model_config qwen3_0_6b_shape() {
  model_config c;
  c.architecture = "Qwen3ForCausalLM";
  c.dim = 1024;
  c.hidden_dim = 3072;
  c.num_layers = 28;
  c.num_heads = 16;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.vocab_size = 151669;
  c.max_seq_len = 40960;
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.rope = rope_style::half;
  c.tied_embeddings = true;
  c.qk_norm = true;
  return c;
}

// Llama-2-13B: the 13B class of Anyscale's continuous-batching experiment (OPT-13B there),
// for `inflight simulate` (no GPU test runs it).
model_config llama2_13b_shape() {
  model_config c;
  c.architecture = "LlamaForCausalLM";
  c.dim = 5120;
  c.hidden_dim = 13824;
  c.num_layers = 40;
  c.num_heads = 40;
  c.num_kv_heads = 40;
  c.head_dim = 128;
  c.vocab_size = 32000;
  c.max_seq_len = 4096;
  c.norm_eps = 1e-5f;
  c.rope = rope_style::half;
  return c;
}

// Qwen3-30B-A3B: 128 experts of 768, 8 per token (about 3.3B of 30.5B parameters active).
model_config qwen3_30b_a3b_shape() {
  model_config c = qwen3_0_6b_shape();
  c.architecture = "Qwen3MoeForCausalLM";
  c.dim = 2048;
  c.hidden_dim = 6144;
  c.num_layers = 48;
  c.num_heads = 32;
  c.num_kv_heads = 4;
  c.vocab_size = 151936;
  c.tied_embeddings = false;
  c.moe = {128, 8, 768, moe_gating::softmax, true, 0};
  return c;
}

// Gemma-3-1B: 26 layers, five of each six reading a 512-key window (RoPE base 10000), the
// sixth the whole context (base 1e6); one KV head of 256; GeGLU; a 262k vocabulary.
model_config gemma3_1b_shape() {
  model_config c;
  c.dim = 1152;
  c.hidden_dim = 6912;
  c.num_layers = 26;
  c.num_heads = 4;
  c.num_kv_heads = 1;
  c.head_dim = 256;
  c.vocab_size = 262144;
  c.max_seq_len = 32768;
  c.norm_eps = 1e-6f;
  c.rope_theta = 1000000.0f;
  c.tied_embeddings = true;
  c.sliding_window = 512;
  const auto& family = *find_family("gemma3");
  c.architecture = std::string(family.hf_architecture);
  c.rope = rope_style::half;
  c.qk_norm = true;
  apply_layer_kinds(c, family);
  return c;
}

}  // namespace

std::optional<model_config> named_shape(std::string_view name) {
  if (name == "bench-20M") return llama2c_shape(288, 768, 6, 6);
  if (name == "bench-110M") return llama2c_shape(768, 2048, 12, 12);
  if (name == "llama-3.2-1b") return llama3_shape(2048, 8192, 16, 64, true);
  if (name == "llama-3.1-8b") return llama3_shape(4096, 14336, 32, 128, false);
  if (name == "qwen3-0.6b") return qwen3_0_6b_shape();
  if (name == "llama-2-13b") return llama2_13b_shape();
  if (name == "qwen3-30b-a3b") return qwen3_30b_a3b_shape();
  if (name == "gemma-3-1b") return gemma3_1b_shape();
  return std::nullopt;
}

std::vector<std::string> shape_names() {
  return {"bench-20M", "bench-110M", "llama-3.2-1b", "llama-3.1-8b", "qwen3-0.6b", "llama-2-13b", "qwen3-30b-a3b",
          "gemma-3-1b"};
}

std::vector<std::string> family_names() {
  std::vector<std::string> names;
  for (const auto& f : model_families()) names.emplace_back(f.name);
  return names;
}

result<model_config> try_as_family(model_config config, std::string_view family) {
  const model_family* f = find_family(family);
  if (f == nullptr) {
    return make_error(errc::invalid_argument, "unknown model family '" + std::string(family) + "' (" +
                                                  family_list(&model_family::name) + ")");
  }
  if (f->name == "llama" && !config.moe.enabled()) return config;
  if (f->moe && !config.moe.enabled()) {
    // A dense shape drawn with experts: 8 of a quarter of its MLP width, 2 per token.
    config.moe.num_experts = 8;
    config.moe.experts_per_token = 2;
    config.moe.expert_hidden_dim = std::max(32, (config.hidden_dim / 4 + 31) / 32 * 32);
  }
  if (f->shared_expert && config.moe.shared_hidden_dim == 0) config.moe.shared_hidden_dim = config.hidden_dim;
  if (f->name == "qwen2moe" || f->sinks_and_biases) config.tied_embeddings = false;  // llama.cpp requires its output matrix
  if (f->scale_embeddings) config.tied_embeddings = true;      // Gemma's classifier is its embedding
  // Gemma's windows as the released models have them (a shape's context may be shorter).
  if (config.sliding_window == 0 && f->name == "gemma2") config.sliding_window = 4096;
  if (config.sliding_window == 0 && f->name == "gemma3") config.sliding_window = 1024;
  if (config.sliding_window == 0 && f->name == "gpt-oss") config.sliding_window = 128;
  return try_apply_family(config, *f);
}

}  // namespace inflight
