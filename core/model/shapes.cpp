#include "core/model/shapes.hpp"

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
  c.scaling = {true, tied ? 32.0f : 8.0f, 1.0f, 4.0f, 8192};
  c.tied_embeddings = tied;
  return c;
}

}  // namespace

std::optional<model_config> named_shape(std::string_view name) {
  if (name == "bench-20M") return llama2c_shape(288, 768, 6, 6);
  if (name == "bench-110M") return llama2c_shape(768, 2048, 12, 12);
  if (name == "llama-3.2-1b") return llama3_shape(2048, 8192, 16, 64, true);
  if (name == "llama-3.1-8b") return llama3_shape(4096, 14336, 32, 128, false);
  return std::nullopt;
}

std::vector<std::string> shape_names() { return {"bench-20M", "bench-110M", "llama-3.2-1b", "llama-3.1-8b"}; }

}  // namespace inflight
