#pragma once
// The served models the gateway harnesses parse requests for: a byte tokenizer (cheap,
// every byte string encodes) with the plain chat fallback, each family template and a
// Jinja template.

#include <memory>
#include <vector>

#include "actors/gateway/errors.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/served_model.hpp"
#include "tests/actors/gateway/byte_model.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace inflight::fuzz {

/// [0] plain chat, then one per family template, one with a Jinja template, then plain
/// chat with reranking and embeddings.
inline const std::vector<gateway::served_model>& served_models() {
  static const std::vector<gateway::served_model> models = [] {
    std::vector<gateway::served_model> out;
    const test::byte_model_options byte300{.max_context = 256, .vocab_size = 300, .has_grammars = false};
    for (const char* name : {"", "llama-2", "llama-3", "mistral", "chatml", "qwen3", "zephyr"}) {
      auto m = test::byte_model(byte300);
      m.name = "fuzz-model";
      m.bos_text = "<s>";
      m.eos_text = "</s>";
      if (*name) {
        auto t = chat_template::try_from_name(name);
        FUZZ_CHECK(t.has_value());
        m.chat = *t;
      }
      out.push_back(std::move(m));
    }
    // A model's own Jinja template (ChatML with tools), run by the interpreter.
    auto jinja = out.front();
    auto t = chat_template::try_from_jinja(
        "{%- if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}{% endfor %}<|im_end|>\n{% endif %}"
        "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content if m.content is string else '' }}"
        "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}<|im_end|>\n"
        "{%- endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
    FUZZ_CHECK(t.has_value());
    jinja.chat = *t;
    out.push_back(std::move(jinja));
    // Plain chat again, serving /v1/rerank and /v1/score (one-byte yes/no words, so the
    // byte tokenizer holds each in one token).
    rerank_settings rs;
    rs.yes_word = "Y";
    rs.no_word = "N";
    rs.max_documents = 64;
    auto scoring = out.front();
    test::serve_reranking(scoring, rs);
    // ... and /v1/embeddings, with every option a request can meet: dimensions
    // allowed, a query prefix, EOS appended, small limits.
    embeddings_settings es;
    es.matryoshka = true;
    es.query_prefix = "Instruct: find\nQuery:";
    es.append_eos = true;
    es.max_inputs = 32;
    es.max_input_tokens = 200;
    test::serve_embeddings(scoring, es, 64);
    out.push_back(std::move(scoring));
    return out;
  }();
  return models;
}

/// An error a client may see: a 4xx/5xx with a type and a message, whose envelope
/// serialises to JSON that parses back.
inline void check_api_error(const gateway::api_error& e) {
  FUZZ_CHECK(e.status >= 400 && e.status <= 599);
  FUZZ_CHECK(!e.type.empty());
  FUZZ_CHECK(!e.message.empty());
  const auto back = nlohmann::json::parse(gateway::dump_json(gateway::error_body(e)), nullptr, false);
  FUZZ_CHECK(!back.is_discarded() && back["error"]["message"].is_string());
}

/// An embeddings request the engine can run: 1..max inputs, each non-empty, inside the
/// context (which a prefill-only input may fill), the per-input limit and the vocabulary.
inline void check_embed_inputs(const std::vector<std::vector<token_id>>& inputs, const gateway::served_model& m) {
  FUZZ_CHECK(!inputs.empty() && static_cast<int>(inputs.size()) <= m.max_embedding_inputs);
  for (const auto& input : inputs) {
    FUZZ_CHECK(!input.empty());
    FUZZ_CHECK(static_cast<int>(input.size()) <= m.max_context);
    FUZZ_CHECK(static_cast<int>(input.size()) <= m.embeddings->max_input_tokens);
    for (token_id id : input) FUZZ_CHECK(id >= 0 && id < m.vocab_size);
  }
}

/// What the engine relies on: non-empty prompts inside the context and the vocabulary.
inline void check_prompt(const std::vector<token_id>& prompt, const gateway::served_model& m) {
  FUZZ_CHECK(!prompt.empty());
  FUZZ_CHECK(static_cast<int>(prompt.size()) < m.max_context);
  for (token_id id : prompt) FUZZ_CHECK(id >= 0 && id < m.vocab_size);
}

inline void check_generate_request(const generate_request& r, const gateway::served_model& m) {
  check_prompt(r.prompt, m);
  FUZZ_CHECK(r.params.max_tokens >= 1);
  FUZZ_CHECK(r.stop.size() <= 16);
  for (const auto& s : r.stop) FUZZ_CHECK(!s.empty());
  for (token_id id : r.params.stop_token_ids) FUZZ_CHECK(id >= 0 && id < m.vocab_size);
}

}  // namespace inflight::fuzz
