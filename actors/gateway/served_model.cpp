#include "actors/gateway/served_model.hpp"

#include <algorithm>
#include <chrono>

#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"

namespace inflight::gateway {

namespace {

std::string special_text(const tokenizer& tok, std::optional<token_id> id) {
  return id ? tok.piece(*id) : std::string();
}

void append_warning(std::string* warning, const std::string& text) {
  if (warning) *warning += (warning->empty() ? "" : "\n") + text;
}

result<void> set_up_rerank(served_model& m, const rerank_settings& s, int max_waiting_requests,
                           std::string* warning) {
  // Each document waits in the engine's queue as a request of its own: a request with
  // more documents than the queue holds could never be queued whole.
  m.max_rerank_documents = std::min(s.max_documents, max_waiting_requests);
  if (s.mode == rerank_mode::off) {
    m.rerank_unavailable = "reranking is disabled on this server (rerank.enabled = false)";
    return {};
  }
  auto r = reranker::try_create(s, m.tok);
  if (r) {
    m.rerank = std::make_shared<const reranker>(std::move(*r));
    return {};
  }
  if (s.mode == rerank_mode::required) return make_error(errc::invalid_argument, "rerank: " + r.error().message);
  m.rerank_unavailable = "reranking is not available for this model: " + r.error().message;
  append_warning(warning, m.rerank_unavailable + " (/v1/rerank and /v1/score answer 400)");
  return {};
}

/// model.tool_call_format, or ("auto") the format the template's markers or family show.
result<void> set_up_tools(served_model& m, const hf_tokenizer* hf, const deployment& d) {
  const std::string source = hf ? hf->chat_template() : std::string();
  std::string renderer = m.chat_template_name;
  if (renderer == "jinja")
    if (auto family = chat_template::try_detect(source)) renderer = std::string(family->name());
  tool_call_format format = detect_tool_call_format(source, renderer);
  if (d.model.tool_call_format != "auto") {
    auto named = try_tool_call_format(d.model.tool_call_format);
    if (!named) return make_error(errc::invalid_argument, "model.tool_call_format: " + named.error().message);
    format = *named;
  }
  m.tool_style = tool_style_for(m.chat_template_name, format);
  m.is_tool_template = source.find("tools") != std::string::npos;
  return {};
}

/// model.reasoning_parser, and the markers' token ids where each is one token.
result<void> set_up_reasoning(served_model& m, const hf_tokenizer* hf, const deployment& d) {
  auto markers = try_reasoning_markers(d.model.reasoning_parser, hf ? hf->chat_template() : std::string());
  if (!markers) return std::unexpected(markers.error());
  m.reasoning = *markers;
  if (!m.reasoning) return {};
  const auto begin = m.tok->encode(m.reasoning->begin, false);
  const auto end = m.tok->encode(m.reasoning->end, false);
  if (begin.size() == 1 && end.size() == 1) m.reasoning_tokens = reasoning_phase{begin[0], end[0]};
  return {};
}

void set_up_embeddings(served_model& m, const loaded_model& model, const deployment& d, std::string* warning) {
  // Each input waits in the engine's queue as a request of its own (as rerank documents do).
  m.max_embedding_inputs = std::min(d.embeddings.max_inputs, d.server.max_waiting_requests);
  m.embedding_width = model.weights ? model.weights->config.dim : 0;
  if (!d.embeddings.enabled) {
    m.embeddings_unavailable = "embeddings are disabled on this server (embeddings.enabled = false)";
  } else if (d.engine.backend == "cuda") {
    m.embeddings_unavailable =
        "embeddings are not implemented on the cuda backend yet (engine.backend = \"cuda\"); the cpu backend serves them";
  } else if (m.embedding_width <= 0) {
    m.embeddings_unavailable = "embeddings need the model's weights";
  } else if (auto recipe = try_resolve_embedding(d.embeddings.pooling, d.embeddings.normalize, model.pooling); !recipe) {
    m.embeddings_unavailable = "embeddings are not available for this model: " + recipe.error().message;
    append_warning(warning, m.embeddings_unavailable + " (/v1/embeddings answers 400)");
  } else {
    m.embeddings = d.embeddings;
    m.embedding = std::move(*recipe);
  }
}

}  // namespace

result<served_model> try_make_served_model(const loaded_model& model, const deployment& d, std::string* warning) {
  served_model m;
  m.tok = model.tok;
  m.name = model.name;
  m.max_context = model.max_context;
  m.vocab_size = model.weights ? model.weights->config.vocab_size : model.tok->vocab_size();
  m.request_timeout_s = d.server.request_timeout_s;
  m.max_choices = d.server.max_choices;
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
  const auto* hf = dynamic_cast<const hf_tokenizer*>(model.tok.get());
  m.bos_text = hf && !hf->bos_token().empty() ? hf->bos_token() : special_text(*model.tok, model.tok->bos_id());
  const auto eos = model.tok->eos_ids();
  m.eos_text = hf && !hf->eos_token().empty() ? hf->eos_token()
                                              : special_text(*model.tok, eos.empty() ? std::nullopt
                                                                                     : std::optional(eos.front()));
  if (!d.model.chat_template.empty()) {
    auto t = chat_template::try_from_name(d.model.chat_template);
    if (!t) return make_error(errc::invalid_argument, "model.chat_template: " + t.error().message);
    m.chat = *t;
  } else if (hf && !hf->chat_template().empty()) {
    std::string why_not_jinja;
    if (auto t = chat_template::try_from_model(hf->chat_template(), &why_not_jinja)) {
      m.chat = *t;
      if (!why_not_jinja.empty()) append_warning(warning, why_not_jinja);
    } else {
      append_warning(warning, why_not_jinja + "; nor is it recognised (" + t.error().message +
                                  "): chat requests use the plain-text fallback. Set model.chat_template to one of " +
                                  chat_template_names());
    }
  }
  m.chat_template_name = m.chat ? std::string(m.chat->name()) : "plain";
  if (auto ok = set_up_tools(m, hf, d); !ok) return std::unexpected(ok.error());
  if (auto ok = set_up_reasoning(m, hf, d); !ok) return std::unexpected(ok.error());
  m.grammars = std::make_shared<grammar_cache>(make_grammar_vocab(*model.tok));
  if (auto ok = set_up_rerank(m, d.rerank, d.server.max_waiting_requests, warning); !ok) return std::unexpected(ok.error());
  set_up_embeddings(m, model, d, warning);
  return m;
}

std::string render_plain_chat(std::span<const chat_message> messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& msg : messages) out += msg.role + ": " + msg.content + "\n";
  if (add_generation_prompt) out += "assistant:";
  return out;
}

result<std::vector<token_id>> try_tokenize_chat(const served_model& m, std::span<const chat_message> messages,
                                                bool add_generation_prompt) {
  if (!m.chat) return tokenize_text(m, render_plain_chat(messages, add_generation_prompt), true);
  auto text = m.chat->try_render(messages, add_generation_prompt, m.bos_text, m.eos_text);
  if (!text) return std::unexpected(text.error());
  return m.tok->encode(*text, false);
}

namespace {

bool has_tool_parts(const chat_input& input) {
  if (input.tools.is_array() && !input.tools.empty()) return true;
  for (const auto& msg : input.messages)
    if (msg.value("role", std::string()) == "tool" || msg.contains("tool_calls")) return true;
  return false;
}

/// The conversation as the built-in renderers and the plain fallback read it: tool
/// definitions and calls flattened into text turns.
chat_input flattened_input(const served_model& m, const chat_input& input) {
  chat_input out = input;
  out.messages = nlohmann::ordered_json::array();
  for (const auto& turn : flatten_tool_conversation(input, m.tool_style))
    out.messages.push_back({{"role", turn.role}, {"content", turn.content}});
  out.tools = nullptr;
  return out;
}

result<std::vector<token_id>> try_tokenize_plain(const served_model& m, const chat_input& input) {
  const auto messages = flatten_tool_conversation(input, m.tool_style);
  std::string text = render_plain_chat(messages, input.add_generation_prompt);
  if (input.continue_final_message && !text.empty() && text.back() == '\n') text.pop_back();
  return tokenize_text(m, text, true);
}

}  // namespace

result<std::vector<token_id>> try_tokenize_chat(const served_model& m, const chat_input& input,
                                                const chat_template* request_template) {
  const chat_template* t = request_template ? request_template : (m.chat ? &*m.chat : nullptr);
  if (!t) return try_tokenize_plain(m, input);
  // Jinja templates read tools themselves, unless the model's own does not know them.
  const bool is_flattened = t->family() != chat_family::jinja ||
                            (!request_template && !m.is_tool_template && has_tool_parts(input));
  chat_input with_specials = is_flattened ? flattened_input(m, input) : input;
  with_specials.bos = m.bos_text;
  with_specials.eos = m.eos_text;
  auto text = t->try_render(with_specials);
  if (!text) return std::unexpected(text.error());
  return m.tok->encode(*text, false);
}

std::vector<token_id> tokenize_text(const served_model& m, const std::string& text, bool add_special) {
  return m.tok->encode(text, add_special && m.tok->adds_bos());
}

std::string detokenize(const served_model& m, std::span<const token_id> ids) {
  incremental_decoder dec(*m.tok);
  std::string out;
  for (token_id t : ids) {
    if (t >= 0 && t < m.tok->vocab_size()) out += dec.push(t);
  }
  return out + dec.flush();
}

}  // namespace inflight::gateway
