#pragma once
// The served model of the gateway's socket-free protocol tests: a byte-level tokenizer
// (token = byte + 3, BOS 1) named "dummy", with a grammar cache for its vocabulary and
// the plain tool prompt style (JSON calls), so that structured outputs and tools parse.
#include <memory>

#include "actors/gateway/served_model.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"

namespace inflight::test {

inline gateway::served_model byte_model(int max_context = 64, double request_timeout_s = 0.0) {
  gateway::served_model m;
  m.tok = std::make_shared<byte_tokenizer>();
  m.name = "dummy";
  m.max_context = max_context;
  m.vocab_size = byte_tokenizer::min_vocab_size;
  m.request_timeout_s = request_timeout_s;
  m.grammars = std::make_shared<grammar_cache>(make_grammar_vocab(*m.tok));
  m.tool_style = tool_style_for("plain", tool_call_format::json);
  return m;
}

}  // namespace inflight::test
