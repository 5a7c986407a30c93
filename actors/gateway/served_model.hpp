#pragma once
/// What the gateway knows about the model it serves: its name, context, tokenizer and
/// chat template, resolved once at start-up.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/api/reasoning.hpp"
#include "core/api/reranker.hpp"
#include "core/api/tool_prompt.hpp"
#include "core/base/error.hpp"
#include "core/config/deployment.hpp"
#include "core/engine/metrics/metrics.hpp"
#include "core/engine/request/sampling_params.hpp"
#include "core/grammar/grammar_cache.hpp"
#include "core/model/model_loader.hpp"
#include "core/model/pooling.hpp"
#include "core/model/template/chat_template.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight::gateway {

struct served_model {
  std::shared_ptr<const tokenizer> tok;
  std::string name;                  ///< the value the `model` field takes (or one of `aliases`)
  std::vector<std::string> aliases;  ///< [[models]] aliases: other values that choose this model
  /// The LoRA adapters' names now (lora.adapters and those loaded at run time): a request
  /// whose `model` names one runs it. The gateway asks its engine (gateway_state).
  std::function<std::vector<std::string>()> adapters;
  std::vector<std::string> adapter_names() const { return adapters ? adapters() : std::vector<std::string>{}; }
  int max_context = 0;
  int vocab_size = 0;
  std::optional<chat_template> chat; ///< none = the plain-text fallback (render_plain_chat)
  std::string chat_template_name;    ///< for the start-up log: "llama-3", "plain" ...
  std::string bos_text, eos_text;    ///< BOS / EOS token texts the templates write
  double request_timeout_s = 0.0;    ///< server.request_timeout_s
  std::shared_ptr<const reranker> rerank;  ///< null: /v1/rerank and /v1/score are not served
  std::string rerank_unavailable;    ///< why rerank is null (the routes' error message)
  int max_rerank_documents = 0;      ///< rerank.max_documents, at most server.max_waiting_requests
  int max_choices = 128;             ///< server.max_choices: prompts x n of one request
  /// [embeddings] when /v1/embeddings is served; none: it answers 400 with
  /// embeddings_unavailable (the reason).
  std::optional<embeddings_settings> embeddings;
  std::string embeddings_unavailable;
  embedding_recipe embedding;        ///< the pooling and normalisation, the settings over the model's own
  int embedding_width = 0;           ///< the model's hidden size: the length of a whole embedding
  int max_embedding_inputs = 0;      ///< embeddings.max_inputs, at most server.max_waiting_requests
  std::int64_t created = 0;          ///< unix time the server started (GET /v1/models)
  /// Structured outputs and forced tool calls: constraints compiled once per content for
  /// this tokenizer's vocabulary, at the gateway (never on the engine's step loop).
  /// Null: constrained requests are refused.
  std::shared_ptr<grammar_cache> grammars;
  /// Where compiles and refused constraints are recorded (the engine's); null: not recorded.
  engine_metrics* metrics = nullptr;
  /// How this model writes tool calls (model.tool_call_format, "auto" = detected), and
  /// how the built-in renderers and the plain fallback write tools into the prompt.
  tool_prompt_style tool_style;
  /// The model's Jinja template reads `tools`. When it does not, a conversation with
  /// tools or tool calls is flattened as for the built-in renderers before it renders.
  bool is_tool_template = true;
  /// model.reasoning_parser: the markers of a thinking model's reasoning; none = no split.
  std::optional<reasoning_markers> reasoning;
  /// The markers' token ids when each is one token (begin_token, end_token): a grammar
  /// then constrains only the answer, and a thinking budget can end the reasoning.
  std::optional<reasoning_phase> reasoning_tokens;
};

/// Resolves the chat template: model.chat_template by name when set, else the one
/// detected from tokenizer_config.json, else the plain-text fallback. An explicit but
/// unknown name is an error; an unrecognised detected template falls back to plain text
/// and says so in `warning`. Sets up reranking as [rerank] says: with enabled = true a
/// template or word the tokenizer cannot serve is an error; with "auto" rerank stays off
/// and `warning` says why. Serves embeddings as [embeddings] says (not on the cuda
/// backend yet), pooled as the model states where embeddings.pooling is "auto"; a
/// pooling the engine does not implement leaves the route off and `warning` says why.
result<served_model> try_make_served_model(const loaded_model& model, const deployment& d, std::string* warning);

/// The fallback template for models without one (llama2.c, byte tokenizer):
///   "<role>: <content>\n" per message, then "assistant:" when `add_generation_prompt`.
std::string render_plain_chat(std::span<const chat_message> messages, bool add_generation_prompt);

/// Prompt token ids of a conversation. Family templates write BOS themselves (as text
/// that parses to the special token), so BOS is added only for the plain fallback.
result<std::vector<token_id>> try_tokenize_chat(const served_model& m, std::span<const chat_message> messages,
                                                bool add_generation_prompt);

/// Prompt token ids of a conversation with its tools (chat_input), rendered by
/// `request_template` (a request's own Jinja template) when given, else by the model's:
/// a Jinja template gets messages and tools as they are (the model's only when it reads
/// `tools`); the built-in renderers, the plain fallback and templates that know no tools
/// get them flattened by flatten_tool_conversation in `m.tool_style`. The template's
/// errors (its raise_exception message) are returned as they are.
result<std::vector<token_id>> try_tokenize_chat(const served_model& m, const chat_input& input,
                                                const chat_template* request_template = nullptr);

/// Token ids of a prompt text, with BOS when the tokenizer wants it and `add_special`.
std::vector<token_id> tokenize_text(const served_model& m, const std::string& text, bool add_special = true);

/// Text of token ids as the engine streams it (BOS / EOS give "").
std::string detokenize(const served_model& m, std::span<const token_id> ids);

}  // namespace inflight::gateway
