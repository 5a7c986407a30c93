#pragma once
/// Relevance scoring with a causal LM (the Qwen3-Reranker recipe): a query and a
/// document are laid into a prompt that asks for a "yes" or "no" judgement, one
/// forward pass runs over it, and the score is P(yes) among {yes, no} at the last
/// position: sigmoid(logit_yes - logit_no).
///
/// A prompt is two separately tokenized parts, split at the start of the template line
/// that holds {document}:
///
///   | prefix: system, instruction, query (one per request) | document part + suffix |
///
/// so every document of a request repeats the same prefix tokens (prefix caching can
/// share them), and the split falls where tokenizers break tokens anyway (after "\n").

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/config/deployment.hpp"
#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

/// The Qwen3-Reranker prompt: a ChatML system message asking for "yes" or "no", the
/// user message "<Instruct>: ...\n<Query>: ...\n<Document>: ...", then the assistant
/// turn opened with an empty think block.
extern const std::string_view default_rerank_template;

/// A scoring prompt: prefix + document part, and how many tokens the prefix has.
struct rerank_prompt {
  std::vector<token_id> tokens;
  int num_prefix_tokens = 0;
};

class reranker {
 public:
  /// Checks the template ({document} exactly once and after every {query}) and that
  /// each word is one token of `tok`, and that the two differ. errc::invalid_argument
  /// names the setting at fault (rerank.template, rerank.yes_word, rerank.no_word).
  static result<reranker> try_create(const rerank_settings& settings, std::shared_ptr<const tokenizer> tok);

  /// Token ids of the part shared by every document of `query` (BOS first when the
  /// tokenizer adds one).
  std::vector<token_id> encode_prefix(std::string_view query) const;
  /// The whole prompt of one document, after `prefix` from encode_prefix(query).
  rerank_prompt encode(const std::vector<token_id>& prefix, std::string_view query, std::string_view document) const;

  /// The vocabulary rows whose logits make the score, in the order score() takes them.
  std::array<token_id, 2> score_rows() const { return {yes_id_, no_id_}; }
  token_id yes_id() const { return yes_id_; }
  token_id no_id() const { return no_id_; }
  const rerank_settings& settings() const { return settings_; }

  /// P(yes) among {yes, no}: sigmoid(logit_yes - logit_no), in [0, 1].
  static double score(double logit_yes, double logit_no);

 private:
  reranker(rerank_settings settings, std::shared_ptr<const tokenizer> tok, std::string prefix_template,
           std::string rest_template, token_id yes_id, token_id no_id);

  rerank_settings settings_;
  std::shared_ptr<const tokenizer> tok_;
  std::string prefix_template_;  ///< the template up to the line holding {document}
  std::string rest_template_;    ///< from that line on
  token_id yes_id_ = 0;
  token_id no_id_ = 0;
};

/// Renders {instruction}, {query} and {document} in one pass: text substituted for a
/// placeholder is never scanned again. Other braces are kept as they are.
std::string render_rerank_template(std::string_view text, std::string_view instruction, std::string_view query,
                                   std::string_view document);

}  // namespace inflight
