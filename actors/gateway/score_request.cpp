#include "actors/gateway/score_request.hpp"

#include <climits>

#include "actors/gateway/json_fields.hpp"
#include "core/engine/request/prompt_limit.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

/// A text of `param`: `item` must be a string (or, when `allow_object`, {"text": string}).
api_result<std::string> text_of(const json& item, const std::string& where, const char* param, bool allow_object) {
  const json* text = &item;
  if (allow_object && item.is_object()) text = item.contains("text") ? &item["text"] : nullptr;
  if (text == nullptr || !text->is_string()) {
    return std::unexpected(bad_request(where + " must be a string" + (allow_object ? " or {\"text\": string}" : ""),
                                       param));
  }
  if (!is_valid_utf8(text->get_ref<const std::string&>())) {
    return std::unexpected(bad_request(where + " is not valid UTF-8", param, "invalid_utf8"));
  }
  return text->get<std::string>();
}

/// A string, or a non-empty list of them (`is_list` says which it was).
api_result<std::vector<std::string>> text_list(const json& body, const char* param, bool allow_object,
                                               bool& is_list) {
  const json* v = field(body, param);
  if (v == nullptr) return std::unexpected(bad_request(std::string(param) + " is required", param));
  is_list = v->is_array();
  std::vector<std::string> out;
  if (!is_list) {
    auto text = text_of(*v, param, param, allow_object);
    if (!text) return std::unexpected(text.error());
    out.push_back(std::move(*text));
    return out;
  }
  if (v->empty()) return std::unexpected(bad_request(std::string(param) + " must not be empty", param));
  for (std::size_t i = 0; i < v->size(); ++i) {
    auto text = text_of((*v)[i], std::string(param) + "[" + std::to_string(i) + "]", param, allow_object);
    if (!text) return std::unexpected(text.error());
    out.push_back(std::move(*text));
  }
  return out;
}

opt_error check_pair_count(std::size_t num_pairs, const served_model& m, const char* param, const char* what) {
  if (num_pairs <= std::size_t(m.max_rerank_documents)) return {};
  return bad_request(std::string(param) + " holds " + std::to_string(num_pairs) + " " + what + "; at most " +
                         std::to_string(m.max_rerank_documents) +
                         " per request (rerank.max_documents; each document is queued as one request, so also "
                         "server.max_waiting_requests)",
                     param, "too_many_documents");
}

/// Served: the request's model is the model or one of its LoRA adapters (`adapter`).
opt_error check_served(const json& body, const served_model& m, std::string& adapter) {
  if (!m.rerank) return bad_request(m.rerank_unavailable, {}, "rerank_unavailable");
  return check_model_name(body, m.name, m.aliases, m.adapter_names(), &adapter);
}

/// Tokenizes pair i = (queries[query_of(i)], documents[i]); each query's prefix once.
api_result<std::vector<std::vector<token_id>>> tokenize_pairs(const served_model& m,
                                                              const std::vector<std::string>& queries,
                                                              const std::vector<std::string>& documents,
                                                              const char* document_param) {
  const auto& r = *m.rerank;
  std::vector<std::vector<token_id>> prefixes;
  for (const auto& q : queries) prefixes.push_back(r.encode_prefix(q));
  std::vector<std::vector<token_id>> out;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const std::size_t q = queries.size() == 1 ? 0 : i;
    auto prompt = r.encode(prefixes[q], queries[q], documents[i]);
    if (int(prompt.tokens.size()) > max_prompt_tokens(m.max_context, true)) {
      return std::unexpected(bad_request(
          std::string(document_param) + "[" + std::to_string(i) + "]: the scoring prompt has " +
              std::to_string(prompt.tokens.size()) + " tokens (template, instruction, query and document), but the "
              "model's context is " + std::to_string(m.max_context) + " tokens",
          document_param, "context_length_exceeded"));
    }
    out.push_back(std::move(prompt.tokens));
  }
  return out;
}

}  // namespace

int score_request::num_prompt_tokens() const {
  int n = 0;
  for (const auto& p : prompts) n += int(p.size());
  return n;
}

api_result<score_request> try_parse_rerank(const json& body, const served_model& m) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  score_request r;
  if (auto e = check_served(body, m, r.adapter)) return std::unexpected(*e);
  r.api = score_api::rerank;
  const json* query = field(body, "query");
  if (query == nullptr) return std::unexpected(bad_request("query is required", "query"));
  auto query_text = text_of(*query, "query", "query", false);
  if (!query_text) return std::unexpected(query_text.error());
  const json* documents = field(body, "documents");
  if (documents != nullptr && !documents->is_array()) {
    return std::unexpected(bad_request("documents must be a list of strings or {\"text\": string} objects", "documents"));
  }
  bool is_list = false;
  auto docs = text_list(body, "documents", true, is_list);
  if (!docs) return std::unexpected(docs.error());
  if (auto e = check_pair_count(docs->size(), m, "documents", "documents")) return std::unexpected(*e);
  if (auto e = read_int(body, "top_n", 0, INT_MAX, r.top_n)) return std::unexpected(*e);
  if (auto e = read_bool(body, "return_documents", r.return_documents)) return std::unexpected(*e);
  if (auto e = read_scheduling_fields(body, r.priority, r.cache_salt)) return std::unexpected(*e);
  auto prompts = tokenize_pairs(m, {*query_text}, *docs, "documents");
  if (!prompts) return std::unexpected(prompts.error());
  r.prompts = std::move(*prompts);
  r.documents = std::move(*docs);
  return r;
}

api_result<score_request> try_parse_score(const json& body, const served_model& m) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  score_request r;
  if (auto e = check_served(body, m, r.adapter)) return std::unexpected(*e);
  r.api = score_api::score;
  bool is_list_1 = false, is_list_2 = false;
  auto text_1 = text_list(body, "text_1", false, is_list_1);
  if (!text_1) return std::unexpected(text_1.error());
  auto text_2 = text_list(body, "text_2", false, is_list_2);
  if (!text_2) return std::unexpected(text_2.error());
  if (text_1->size() > 1 && text_1->size() != text_2->size()) {
    return std::unexpected(bad_request("text_1 has " + std::to_string(text_1->size()) + " texts and text_2 " +
                                           std::to_string(text_2->size()) + ": pairs are 1:1, 1:N or N:N",
                                       "text_2"));
  }
  if (auto e = check_pair_count(text_2->size(), m, "text_2", "texts")) return std::unexpected(*e);
  if (auto e = read_scheduling_fields(body, r.priority, r.cache_salt)) return std::unexpected(*e);
  auto prompts = tokenize_pairs(m, *text_1, *text_2, "text_2");
  if (!prompts) return std::unexpected(prompts.error());
  r.prompts = std::move(*prompts);
  return r;
}

}  // namespace inflight::gateway
