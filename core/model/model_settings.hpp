#pragma once
/// What a deployment's [model] table says: which file, in which format, stored how.
/// core/config/deployment.hpp holds it with every other part's settings; the model
/// loader (core/model/model_loader.hpp) needs only this.

#include <cstdint>
#include <string>

namespace inflight {

/// Shape of a random-weight model (format = "dummy").
struct dummy_shape {
  int hidden_size = 256;
  int intermediate_size = 688;
  int num_layers = 4;
  int num_heads = 8;
  int num_kv_heads = 4;
  int head_dim = 0;  ///< 0 = hidden_size / num_heads
  int vocab_size = 259;  ///< the byte-level tokenizer's vocabulary (3 specials + 256 bytes)
  int max_position = 2048;
  float rope_theta = 10000.0f;
  bool tied_embeddings = true;
  std::string family = "llama";  ///< a family of model_family.hpp (llama, qwen3, qwen3moe, ...)
  int num_experts = 0;            ///< a mixture family: 0 takes 8 experts, 2 per token, a quarter width
  int experts_per_token = 0;
  int expert_intermediate_size = 0;
  std::uint64_t seed = 0;
};

struct model_settings {
  std::string path;                ///< llama2.c .bin, .gguf file, or a Hugging Face model folder; empty = dummy
                                   ///< (hf:ORG/REPO[:QUANT|/FILE][@REV]: the CLI fetches it first, hub/)
  std::string hf_token_file;       ///< a Hugging Face token for gated repositories (HF_TOKEN wins)
  /// What to serve when model.path is a hub name the Hub cannot be reached for and the
  /// cache lacks: "" = nothing (an error), "dummy" = random weights, with a notice.
  std::string fallback;
  std::string format = "auto";     ///< auto | llama2c | hf | gguf | dummy
  std::string tokenizer;           ///< tokenizer file or folder; empty = next to the model / byte-level
  std::string name;                ///< served model name; empty = derived from the path
  std::string dtype = "auto";      ///< auto | float32 | bfloat16 | float16
  /// Storage type of the matrices: "auto" keeps the file's; a weight_dtype name (or
  /// "q4_k_m", llama.cpp's mix) converts at load.
  std::string weight_dtype = "auto";
  /// How weight files (GGUF, safetensors) come into memory: "mmap" maps them, "read" reads
  /// them into memory of the process's own (huge pages advised; on the CPU their products
  /// stream faster), "auto" reads for the cpu backend when they fit in three quarters of the
  /// available memory and maps otherwise (cuda keeps its weights on the GPU).
  std::string load_mode = "auto";
  int max_context = 0;             ///< 0 = the model's own
  std::string chat_template;       ///< empty = the model's own (Jinja) template; else a built-in by name
  /// How the model writes tool calls: auto (from the chat template) | hermes | llama3_json | json.
  std::string tool_call_format = "auto";
  /// Where a thinking model's reasoning is in its output: auto (<think> ... </think> when the
  /// chat template writes it) | none | think (aliases deepseek_r1, qwen3).
  std::string reasoning_parser = "auto";
  std::string config_json;         ///< format = dummy: shape from this config.json instead of [model.dummy]
  dummy_shape dummy;
};

}  // namespace inflight
