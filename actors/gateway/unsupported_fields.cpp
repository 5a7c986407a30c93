#include "actors/gateway/unsupported_fields.hpp"

#include <string>

namespace inflight::gateway {

using nlohmann::json;

namespace {

// OpenAI: CreateCompletionRequest / CreateChatCompletionRequest (openai-openapi 2.3.0);
// vLLM: the extra fields of its completion and chat requests. response_format,
// structured outputs, guided decoding, tools and logit_bias are parsed elsewhere.
constexpr unsupported_field table[] = {
    {"suffix", true, false, set_when::not_empty, "text after the insertion point (fill-in-the-middle) is not implemented"},
    {"best_of", true, true, set_when::above_one, "generating best_of candidates and returning the most likely is not implemented"},
    {"use_beam_search", true, true, set_when::is_true, "beam search is not implemented"},
    {"prompt_logprobs", true, true, set_when::not_null, "logprobs of prompt tokens are not implemented"},
    {"min_tokens", true, true, set_when::above_zero, "a minimum output length is not implemented"},
    {"include_stop_str_in_output", true, true, set_when::is_true, "stop strings are always cut from the output"},
    {"skip_special_tokens", true, true, set_when::is_false, "special tokens are always left out of the text"},
    {"truncate_prompt_tokens", true, true, set_when::not_null, "prompt truncation is not implemented"},
    {"allowed_token_ids", true, true, set_when::not_null, "restricting sampling to a token list is not implemented"},
    {"bad_words", true, true, set_when::not_empty, "bad-word bans are not implemented"},
    {"logits_processors", true, true, set_when::not_empty, "custom logits processors are not implemented"},
    {"return_tokens_as_token_ids", true, true, set_when::is_true, "logprobs name tokens by their text"},
    {"return_token_ids", true, true, set_when::is_true, "responses do not carry token ids"},
    {"prompt_embeds", true, true, set_when::not_null, "prompts given as embeddings are not implemented"},
    {"echo", false, true, set_when::is_true, "chat does not echo the last message (completions do)"},
    {"add_special_tokens", false, true, set_when::is_true, "the chat template writes the special tokens"},
    {"documents", false, true, set_when::not_empty, "documents for the chat template are not implemented"},
    {"mm_processor_kwargs", false, true, set_when::not_empty, "multimodal inputs are not implemented"},
    {"modalities", false, true, set_when::not_text, "only text output is implemented"},
    {"audio", false, true, set_when::not_null, "audio output is not implemented"},
    {"verbosity", false, true, set_when::not_null, "verbosity is not implemented"},
    {"web_search_options", false, true, set_when::not_null, "web search is not implemented"},
    {"moderation", false, true, set_when::not_null, "moderation is not implemented"},
    {"functions", false, true, set_when::not_empty, "function calling through the deprecated functions field is not implemented"},
    {"function_call", false, true, set_when::is_object, "function calling through the deprecated function_call field is not implemented"},
};

bool is_set(const json& v, set_when when) {
  if (v.is_null()) return false;
  switch (when) {
    case set_when::not_null: return true;
    case set_when::is_true: return !(v.is_boolean() && !v.get<bool>());
    case set_when::is_false: return v.is_boolean() && !v.get<bool>();
    case set_when::not_empty:
      if (v.is_string()) return !v.get_ref<const std::string&>().empty();
      return !((v.is_array() || v.is_object()) && v.empty());
    case set_when::above_one: return !(v.is_number() && v.get<double>() == 1.0);
    case set_when::above_zero: return !(v.is_number() && v.get<double>() == 0.0);
    case set_when::not_text:
      if (!v.is_array()) return true;
      for (const auto& m : v)
        if (m != "text") return true;
      return false;
    case set_when::is_object: return v.is_object();
  }
  return true;
}

}  // namespace

std::span<const unsupported_field> unsupported_fields() { return table; }

opt_error check_unsupported_fields(const json& body, bool is_chat) {
  for (const auto& f : table) {
    if (!(is_chat ? f.in_chat : f.in_completions)) continue;
    const std::string name(f.name);
    const auto it = body.find(name);
    if (it == body.end() || !is_set(*it, f.when)) continue;
    return bad_request(name + " is not supported by this server: " + std::string(f.why), name, "unsupported");
  }
  return {};
}

}  // namespace inflight::gateway
