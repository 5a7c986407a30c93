#pragma once
/// LoRA adapters (low-rank updates of a base model's projections) as PEFT saves them:
/// a folder with adapter_config.json (`r`, `lora_alpha`, `target_modules`, optional
/// `use_rslora`) and adapter_model.safetensors (`...layers.N.self_attn.q_proj.lora_A.weight`
/// [r x in], `...lora_B.weight` [out x r], f32, f16 or bf16). A projection W then computes
/// W x + scale * B (A x), scale = alpha / r (rsLoRA: alpha / sqrt(r)).

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/model_config.hpp"
#include "core/model/model_weights.hpp"

namespace inflight {

/// The projections an adapter may change, in the kernels' order (kernels/cpu/llama.hpp).
/// (A GGUF LoRA file names them as GGUF bases do: attn_q, ..., ffn_down.)
enum class lora_module { q, k, v, o, gate, up, down, count };
constexpr int num_lora_modules = int(lora_module::count);
/// PEFT's name of a module: "q_proj", ..., "down_proj".
const char* peft_name(lora_module m);

struct lora_update {
  std::vector<float> a;  ///< [rank x in]; empty: the module is not changed
  std::vector<float> b;  ///< [out x rank]
  int rank = 0;
  float scale = 0.0f;
};

struct lora_adapter {
  std::string name;    ///< what requests call it (lora_registry sets it; "" for a bare load)
  /// Its registration, unique in a server (lora_registry; 0 for a bare load): the prefix
  /// cache keeps adapters registered under one name at different times apart.
  std::uint64_t id = 0;
  std::string source;  ///< the folder, for messages
  int rank = 0;        ///< the largest of its updates
  std::vector<std::array<lora_update, num_lora_modules>> layers;
};

/// A PEFT adapter folder, or a llama.cpp GGUF LoRA file (general.type = adapter,
/// adapter.lora.alpha; blk.N.attn_q.weight.lora_a [r x in] and .lora_b [out x r], ...),
/// for a base model of `config`. Errors as try_load_peft_adapter's.
result<lora_adapter> try_load_lora_adapter(const std::filesystem::path& path, const model_config& config);

/// Reads a PEFT adapter folder for a base model of `config`; a shape that does not fit,
/// a target module the engine does not apply (embed_tokens, lm_head, ...), a layer the
/// base lacks or a missing tensor is an error naming it.
result<lora_adapter> try_load_peft_adapter(const std::filesystem::path& folder, const model_config& config);

/// The base's weights with each update merged in (W + scale * B A, as f32 matrices):
/// what the adapter computes, as one model (the exactness checks compare with it).
result<model_weights> try_merge_lora(const model_weights& base, const lora_adapter& adapter);

}  // namespace inflight
