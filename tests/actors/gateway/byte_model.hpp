#pragma once
// The served models of the gateway's socket-free tests and fuzz harnesses, built in one
// place: a byte-level tokenizer (token = byte + 3, BOS 1, EOS 2) named "dummy", with a
// grammar cache for its vocabulary and the plain tool prompt style (JSON calls), so that
// structured outputs and tools parse; and the same model serving embeddings or reranking.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "actors/gateway/served_model.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"

namespace inflight::test {

struct byte_model_options {
  int max_context = 64;
  double request_timeout_s = 0.0;
  int vocab_size = byte_tokenizer::min_vocab_size;  ///< ids past the bytes decode to nothing
  bool has_grammars = true;  ///< a grammar cache: structured outputs and forced tool calls compile
};

inline gateway::served_model byte_model(const byte_model_options& o = {}) {
  gateway::served_model m;
  m.tok = std::make_shared<const byte_tokenizer>(o.vocab_size);
  m.name = "dummy";
  m.max_context = o.max_context;
  m.vocab_size = o.vocab_size;
  m.request_timeout_s = o.request_timeout_s;
  if (o.has_grammars) m.grammars = std::make_shared<grammar_cache>(make_grammar_vocab(*m.tok));
  m.tool_style = tool_style_for("plain", tool_call_format::json);
  return m;
}

/// `m` serving /v1/embeddings with `s`, its hidden states `width` wide.
inline void serve_embeddings(gateway::served_model& m, const embeddings_settings& s, int width) {
  m.embeddings = s;
  m.embedding_width = width;
  m.max_embedding_inputs = s.max_inputs;
}

/// `m` serving /v1/rerank and /v1/score with `s` (its yes and no words must be one token
/// of m's tokenizer: one byte each for the byte tokenizer).
inline void serve_reranking(gateway::served_model& m, const rerank_settings& s) {
  auto r = reranker::try_create(s, m.tok);
  if (!r) throw std::runtime_error("serve_reranking: " + r.error().message);
  m.rerank = std::make_shared<const reranker>(std::move(*r));
  m.max_rerank_documents = s.max_documents;
}

/// What the byte tokenizer makes of `text` with BOS first.
inline std::vector<token_id> byte_ids(std::string_view text) {
  std::vector<token_id> ids{byte_tokenizer::bos_token};
  for (const unsigned char c : text) ids.push_back(token_id(c) + byte_tokenizer::byte_offset);
  return ids;
}

}  // namespace inflight::test
