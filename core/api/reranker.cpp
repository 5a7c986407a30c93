#include "core/api/reranker.hpp"

#include <cmath>

namespace inflight {

const std::string_view default_rerank_template =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
    "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

namespace {

constexpr std::string_view document_slot = "{document}";
constexpr std::string_view query_slot = "{query}";

std::size_t count_of(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string_view::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

result<token_id> single_token(const tokenizer& tok, const std::string& word, const char* key) {
  const auto ids = tok.encode(word, false);
  if (ids.size() == 1) return ids.front();
  std::string list;
  for (const auto id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return make_error(errc::invalid_argument,
                    std::string(key) + " \"" + word + "\" is " + std::to_string(ids.size()) +
                        " tokens in this model's tokenizer ([" + list +
                        "]); scoring reads the logit of one token, so rerank.yes_word and rerank.no_word must "
                        "each be a single token");
}

}  // namespace

std::string render_rerank_template(std::string_view text, std::string_view instruction, std::string_view query,
                                   std::string_view document) {
  const std::pair<std::string_view, std::string_view> slots[] = {
      {"{instruction}", instruction}, {query_slot, query}, {document_slot, document}};
  std::string out;
  out.reserve(text.size() + query.size() + document.size() + instruction.size());
  std::size_t i = 0;
  while (i < text.size()) {
    bool is_slot = false;
    for (const auto& [name, value] : slots) {
      if (text.substr(i, name.size()) == name) {
        out += value;
        i += name.size();
        is_slot = true;
        break;
      }
    }
    if (!is_slot) out += text[i++];
  }
  return out;
}

result<reranker> reranker::try_create(const rerank_settings& s, std::shared_ptr<const tokenizer> tok) {
  if (!tok) return make_error(errc::invalid_argument, "rerank: no tokenizer");
  const std::string_view text = s.prompt_template.empty() ? default_rerank_template : s.prompt_template;
  if (count_of(text, document_slot) != 1) {
    return make_error(errc::invalid_argument, "rerank.template must hold {document} exactly once");
  }
  const auto document_at = text.find(document_slot);
  if (count_of(text, query_slot) == 0 || text.rfind(query_slot) > document_at) {
    return make_error(errc::invalid_argument,
                      "rerank.template must hold {query}, and only before {document} (instruction and query are the "
                      "prefix every document shares)");
  }
  // Split where the line of {document} starts: tokenizers break after "\n" anyway.
  const auto line_start = text.rfind('\n', document_at);
  const auto split = line_start == std::string_view::npos ? document_at : line_start + 1;
  auto yes = single_token(*tok, s.yes_word, "rerank.yes_word");
  if (!yes) return std::unexpected(yes.error());
  auto no = single_token(*tok, s.no_word, "rerank.no_word");
  if (!no) return std::unexpected(no.error());
  if (*yes == *no) {
    return make_error(errc::invalid_argument, "rerank.yes_word and rerank.no_word are the same token");
  }
  return reranker(s, std::move(tok), std::string(text.substr(0, split)), std::string(text.substr(split)), *yes, *no);
}

reranker::reranker(rerank_settings settings, std::shared_ptr<const tokenizer> tok, std::string prefix_template,
                   std::string rest_template, token_id yes_id, token_id no_id)
    : settings_(std::move(settings)),
      tok_(std::move(tok)),
      prefix_template_(std::move(prefix_template)),
      rest_template_(std::move(rest_template)),
      yes_id_(yes_id),
      no_id_(no_id) {}

std::vector<token_id> reranker::encode_prefix(std::string_view query) const {
  const auto text = render_rerank_template(prefix_template_, settings_.instruction, query, {});
  return tok_->encode(text, tok_->adds_bos());
}

rerank_prompt reranker::encode(const std::vector<token_id>& prefix, std::string_view query,
                               std::string_view document) const {
  rerank_prompt out;
  out.tokens = prefix;
  out.num_prefix_tokens = int(prefix.size());
  const auto rest = tok_->encode(render_rerank_template(rest_template_, settings_.instruction, query, document), false);
  out.tokens.insert(out.tokens.end(), rest.begin(), rest.end());
  return out;
}

double reranker::score(double logit_yes, double logit_no) {
  // Either branch keeps exp's argument <= 0, so neither overflows.
  const double d = logit_yes - logit_no;
  if (d >= 0) return 1.0 / (1.0 + std::exp(-d));
  const double e = std::exp(d);
  return e / (1.0 + e);
}

}  // namespace inflight
