#include "core/bench/rerank_workload.hpp"

#include <algorithm>
#include <span>

namespace inflight::bench {

namespace {

std::string decode(const tokenizer& tok, std::span<const token_id> ids) {
  incremental_decoder dec(tok);
  std::string out;
  for (const auto id : ids) out += dec.push(id);
  return out + dec.flush();
}

}  // namespace

rerank_shape rerank_shape_of(workload_size size) {
  if (size == workload_size::full) return {20, 32, 100, 256};
  return {5, 16, 100, 64};
}

std::vector<token_id> whole_character_tokens(const tokenizer& tok, int first_id) {
  std::vector<token_id> ids;
  for (token_id id = first_id; id < tok.vocab_size(); ++id) {
    const auto text = decode(tok, std::span(&id, 1));
    const bool is_printable = std::none_of(text.begin(), text.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (!text.empty() && is_printable && is_valid_utf8(text) && text.find("\xEF\xBF\xBD") == std::string::npos) {
      ids.push_back(id);
    }
  }
  return ids;
}

std::string text_of_tokens(const tokenizer& tok, const std::vector<token_id>& ids, int num_tokens,
                           std::mt19937_64& rng) {
  if (ids.empty()) return {};
  std::uniform_int_distribution<std::size_t> pick(0, ids.size() - 1);
  const auto draw = [&](int n) {
    std::vector<token_id> drawn(std::size_t(std::max(0, n)));
    for (auto& t : drawn) t = ids[pick(rng)];
    return decode(tok, drawn);
  };
  // Decoded random ids re-encode to about as many tokens (merges differ): cut or
  // extend until the count settles.
  std::string text = draw(num_tokens);
  for (int round = 0; round < 8; ++round) {
    const auto encoded = tok.encode(text, false);
    const int n = int(encoded.size());
    if (n == num_tokens) break;
    if (n > num_tokens) {
      text = decode(tok, std::span(encoded).first(std::size_t(num_tokens)));
    } else {
      text += draw(num_tokens - n);
    }
  }
  return text;
}

namespace {

/// The size's shape with `num_requests` calls (0: the size's count).
result<rerank_shape> shape_with(workload_size size, int num_requests) {
  if (num_requests < 0) return make_error(errc::invalid_argument, "the number of requests must not be negative");
  auto shape = rerank_shape_of(size);
  if (num_requests > 0) shape.num_requests = num_requests;
  return shape;
}

}  // namespace

result<std::vector<rerank_case>> rerank_workload(workload_size size, int num_requests, const tokenizer& tok,
                                                 std::mt19937_64& rng) {
  auto checked = shape_with(size, num_requests);
  if (!checked) return std::unexpected(checked.error());
  const auto shape = *checked;
  const auto ids = whole_character_tokens(tok);
  if (ids.empty()) return make_error(errc::invalid_argument, "the tokenizer has no tokens to write text with");
  std::vector<rerank_case> cases(std::size_t(shape.num_requests));
  for (auto& c : cases) {
    c.query = text_of_tokens(tok, ids, shape.query_tokens, rng);
    for (int d = 0; d < shape.num_documents; ++d) {
      c.documents.push_back(text_of_tokens(tok, ids, shape.document_tokens, rng));
    }
  }
  return cases;
}

result<std::vector<bench_prompt>> rerank_prompts(workload_size size, int num_requests, rerank_template_tokens t,
                                                 int vocab_size, std::mt19937_64& rng) {
  auto checked = shape_with(size, num_requests);
  if (!checked) return std::unexpected(checked.error());
  const auto shape = *checked;
  if (t.before_query < 0 || t.before_document < 0 || t.after_document < 0)
    return make_error(errc::invalid_argument, "rerank template tokens must not be negative");
  constexpr token_id first_id = 3;
  if (vocab_size <= first_id) return make_error(errc::invalid_argument, "the vocabulary is too small for prompts");
  std::uniform_int_distribution<token_id> draw(first_id, vocab_size - 1);
  auto ids = [&](int n) {
    std::vector<token_id> out;
    for (int i = 0; i < n; ++i) out.push_back(draw(rng));
    return out;
  };
  const auto head = ids(t.before_query), document_head = ids(t.before_document), tail = ids(t.after_document);
  std::vector<bench_prompt> prompts;
  for (int call = 0; call < shape.num_requests; ++call) {
    const auto query = ids(shape.query_tokens);
    for (int d = 0; d < shape.num_documents; ++d) {
      bench_prompt p;
      for (const auto* part : {&head, &query, &document_head}) p.prompt_ids.insert(p.prompt_ids.end(), part->begin(), part->end());
      const auto document = ids(shape.document_tokens);
      p.prompt_ids.insert(p.prompt_ids.end(), document.begin(), document.end());
      p.prompt_ids.insert(p.prompt_ids.end(), tail.begin(), tail.end());
      p.input_len = int(p.prompt_ids.size());
      p.output_len = 1;
      p.arrival_s = 0.0;
      p.is_score = true;
      p.group = call;
      p.tag = "rerank";
      prompts.push_back(std::move(p));
    }
  }
  return prompts;
}

}  // namespace inflight::bench
