#pragma once
/// Decoders in GGUF files: metadata -> model_config, tensors -> model_weights
/// (matrices stay in the file's types, as views into the mapping; norms and biases are
/// decoded to fp32), tokenizer.ggml.* -> the tokenizer.
///
///   general.architecture   a family's GGUF name (model_family.hpp): llama (Llama 2/3,
///                          Mistral, TinyLlama, SmolLM; Mixtral when it has experts), qwen2,
///                          qwen3, qwen2moe, qwen3moe
///   {arch}.embedding_length, block_count, feed_forward_length, attention.head_count,
///   attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon,
///   rope.freq_base, rope.dimension_count (partial rotary), rope.scaling.{type, factor,
///   original_context_length, yarn_beta_fast, yarn_beta_slow} (linear, YaRN),
///   expert_count, expert_used_count, expert_feed_forward_length,
///   expert_shared_feed_forward_length, context_length, pooling_type
///   tensors  token_embd, output_norm, output (absent: tied), rope_freqs (llama: Llama-3
///            scaling, see rope_factors.hpp), blk.N.{attn_norm, attn_q, attn_k, attn_v,
///            attn_output, attn_q.bias, attn_k.bias, attn_v.bias, attn_q_norm,
///            attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight; with experts
///            blk.N.{ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps} (stacked
///            [experts x rows x cols]) and the shared expert's ffn_{gate,up,down}_shexp,
///            ffn_gate_inp_shexp
///
/// Anything the engine would compute differently is refused with errc::unsupported
/// naming it: another architecture, a tensor the loader does not use, RoPE scaling
/// other than Llama-3's, linear and YaRN, value heads of another width than key heads.

#include <filesystem>
#include <memory>
#include <string_view>

#include "core/base/error.hpp"
#include "core/model/gguf/gguf.hpp"
#include "core/model/model_weights.hpp"
#include "core/model/pooling.hpp"
#include "core/model/tokenizer/gguf_vocab.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {


/// A loaded GGUF model.
struct gguf_model {
  model_weights weights;
  gguf_vocab vocab;
  std::shared_ptr<const tokenizer> tok;
  std::string architecture;  ///< general.architecture
  std::string name;          ///< general.name ("" when absent)
  model_pooling pooling;     ///< {arch}.pooling_type (embedding models; absent: nothing stated)
};

/// What `{arch}.pooling_type` states (ggml's enum, see gguf_pooling); errc::corrupt_file
/// when it is not an integer.
result<model_pooling> try_read_gguf_pooling(const gguf_file& file, const std::string& architecture);

/// The model shape a file's metadata describes; `vocab_size` comes from the token list.
result<model_config> try_read_gguf_config(const gguf_file& file, int vocab_size);

/// Every tensor `config` needs, checked in shape; a file tensor it does not use is an error.
result<model_weights> try_load_gguf_weights(const gguf_file& file, const model_config& config);

/// Opens, validates and loads a whole GGUF model.
result<gguf_model> try_load_gguf_model(const std::filesystem::path& path, file_load load = file_load::map);

}  // namespace inflight
