#pragma once
/// Loads what a deployment's [model] names: a llama2.c checkpoint, a Hugging Face
/// folder, a GGUF file, or dummy weights of a shape, with the matching tokenizer.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/mapped_file.hpp"
#include "core/model/model_settings.hpp"
#include "core/model/model_weights.hpp"
#include "core/model/pooling.hpp"
#include "core/model/template/chat_template.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

struct loaded_model {
  std::shared_ptr<const model_weights> weights;
  std::shared_ptr<const tokenizer> tok;
  std::string name;                 ///< served model name
  std::string format;               ///< llama2c | hf | gguf | dummy
  std::string description;          ///< one line for the start-up log
  std::vector<token_id> eos_ids;
  int max_context = 0;
  /// The chat template (model.chat_template, or detected from tokenizer_config.json);
  /// empty for models without one: chat then uses a plain "role: content" layout.
  std::optional<chat_template> chat;
  std::string bos_text, eos_text;   ///< special-token text the chat template may use
  /// How the model says its embeddings are pooled (GGUF pooling_type, sentence-transformers
  /// modules); empty for formats and models that say nothing. embeddings.pooling = "auto"
  /// follows it (try_resolve_embedding).
  model_pooling pooling;
};

/// Model config of a dummy shape.
model_config dummy_model_config(const dummy_shape& shape);

/// Resolves `format = "auto"` from the path: a folder is hf, a .gguf file (or one that
/// starts with "GGUF") gguf, another file llama2c, none dummy.
std::string resolve_format(const model_settings& settings);

/// A tokenizer alone: a llama2.c tokenizer.bin, a tokenizer.json, a model folder holding
/// one, or a GGUF file (its vocabulary).
result<std::shared_ptr<const tokenizer>> try_load_tokenizer(const std::string& path);

/// `backend` ("cpu" | "cuda") decides model.load_mode = "auto".
result<loaded_model> load_model(const model_settings& settings, std::string_view backend = "cpu");

/// model.load_mode resolved for `backend`: "auto" reads when the weight files at
/// settings.path fit in three quarters of `available_bytes` (0: unknown, then maps).
file_load resolve_load_mode(const model_settings& settings, std::string_view backend, std::uint64_t available_bytes);

}  // namespace inflight
