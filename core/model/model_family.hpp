#pragma once
/// The decoder families inflight runs, as data: how GGUF (general.architecture) and
/// Hugging Face (config.json "architectures") name each, and what its layers are. The
/// readers fill a model_config from the family's entry plus the file's numbers; both
/// backends read only the model_config. A new family is an entry here plus the kernels
/// it truly lacks.
///
///   family     GGUF arch   HF architectures                      layers
///   llama      llama       LlamaForCausalLM, MistralForCausalLM  dense SwiGLU (Q/K rows interleaved in GGUF)
///   qwen2      qwen2       Qwen2ForCausalLM                      + q/k/v biases
///   qwen3      qwen3       Qwen3ForCausalLM                      + per-head q/k RMSNorm
///   mixtral    llama       MixtralForCausalLM                    experts, softmax, top-k renormalised
///   qwen2moe   qwen2moe    Qwen2MoeForCausalLM                   + q/k/v biases, experts, a gated shared expert
///   qwen3moe   qwen3moe    Qwen3MoeForCausalLM                   + q/k norms, experts, top-k renormalised
///   gemma      gemma       GemmaForCausalLM                      GeGLU, embeddings scaled by sqrt(dim), norms 1 + w
///   gemma2     gemma2      Gemma2ForCausalLM                     + post-norms, soft-capped scores and logits,
///                                                                  every second layer windowed
///   gemma3     gemma3      Gemma3ForCausalLM (and the text decoder
///                          of Gemma3ForConditionalGeneration)   + q/k norms, five windowed layers (RoPE base
///                                                                  10000) per global one, no soft-caps
///   phi3       phi3        Phi3ForCausalLM                       fused qkv and gate_up projections
///   gpt-oss    gpt-oss     GptOssForCausalLM (GGUF only)        + q/k/v/o biases, sinks, every second layer
///                                                                  windowed, experts with biases, clamped SwiGLU

#include <span>
#include <string>
#include <string_view>

#include "core/base/error.hpp"
#include "core/model/model_config.hpp"

namespace inflight {

struct model_family {
  std::string_view name;               ///< make-model --family, docs
  std::string_view gguf_architecture;  ///< general.architecture
  std::string_view hf_architecture;    ///< config.json "architectures" (written by inflight)
  std::string_view hf_alias;           ///< another HF name of the same layers ("" when none)
  /// Pair order of the Q/K rows in GGUF files: llama.cpp's converter permutes "llama"
  /// files into Meta's interleaved order; every other family keeps rotate_half's.
  rope_style gguf_rope = rope_style::half;
  bool attention_bias = false;  ///< q/k/v biases, always
  bool qk_norm = false;         ///< per-head q/k RMSNorm before RoPE
  bool moe = false;             ///< the MLP is a mixture of experts
  bool moe_normalize = false;   ///< default for renormalising the chosen experts' weights
  bool shared_expert = false;   ///< a shared expert beside the routed ones, sigmoid-gated
  mlp_activation activation = mlp_activation::silu;
  /// Hugging Face stores the RMSNorm weights as w - 1 (Gemma's norms multiply by 1 + w);
  /// GGUF's converter has added the 1 already.
  bool norm_offset = false;
  bool scale_embeddings = false;  ///< embeddings times sqrt(dim)
  bool post_norms = false;        ///< attention and MLP outputs normed before the residual
  float attn_softcap = 0.0f;      ///< defaults where a file does not say
  float final_softcap = 0.0f;
  int window_period = 0;          ///< model_config::window_period where a file does not say
  float rope_local_theta = 0.0f;  ///< the windowed layers' RoPE base where a file does not say
  /// Q/K/V in one matrix (qkv_proj, attn_qkv) and gate/up in one (gate_up_proj, ffn_up
  /// of twice the width), split as views at load.
  bool fused_projections = false;
  /// gpt-oss: sink logits, an output-projection bias, a biased router and experts.
  bool sinks_and_biases = false;
  /// Hugging Face folders of the family load (gpt-oss's hold MXFP4 blocks in safetensors,
  /// which inflight does not read: its GGUF files do).
  bool hf_loadable = true;
};

/// Every family, in the table's order.
std::span<const model_family> model_families();
/// By family name; null when unknown.
const model_family* find_family(std::string_view name);
/// By GGUF general.architecture; `has_experts` picks Mixtral's entry for "llama" files
/// with expert_count. Null when unknown.
const model_family* find_gguf_family(std::string_view architecture, bool has_experts);
/// By a config.json architecture name; null when unknown.
const model_family* find_hf_family(std::string_view architecture);
/// The family a config describes (by its architecture; llama2.c checkpoints are llama).
const model_family& family_of(const model_config& config);
/// "a, b, c": the names `key` gives for every family, each once (for error messages).
std::string family_list(std::string_view model_family::*key);

/// The family's additions to the Llama layer, at their defaults (activation, embedding
/// scale, post-norms, soft-caps, window period, local RoPE base): what a file may then
/// override. The window's size is the file's (config.sliding_window).
void apply_layer_kinds(model_config& config, const model_family& family);

/// `config` with the family's name and layer kinds (architecture, biases, q/k norms, and
/// for a mixture its gating defaults); the shape's numbers are kept. A family with
/// experts needs config.moe's counts set (errc::invalid_argument otherwise).
result<model_config> try_apply_family(model_config config, const model_family& family);

}  // namespace inflight
