#include "core/bench/rerank_workload.hpp"

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

std::string text_of_tokens(const tokenizer& tok, int num_tokens, std::mt19937_64& rng, int first_id) {
  std::uniform_int_distribution<int> id(first_id, tok.vocab_size() - 1);
  const auto draw = [&](int n) {
    std::vector<token_id> ids(std::size_t(std::max(0, n)));
    for (auto& t : ids) t = token_id(id(rng));
    return decode(tok, ids);
  };
  // Decoded random ids re-encode to about as many tokens (merges, byte fallback):
  // cut or extend until the count settles.
  std::string text = draw(num_tokens);
  for (int round = 0; round < 8; ++round) {
    const auto ids = tok.encode(text, false);
    const int n = int(ids.size());
    if (n == num_tokens) break;
    if (n > num_tokens) {
      text = decode(tok, std::span(ids).first(std::size_t(num_tokens)));
    } else {
      text += draw(num_tokens - n);
    }
  }
  return text;
}

result<std::vector<rerank_case>> rerank_workload(workload_size size, int num_requests, const tokenizer& tok,
                                                 std::mt19937_64& rng) {
  if (num_requests < 0) return make_error(errc::invalid_argument, "the number of requests must not be negative");
  auto shape = rerank_shape_of(size);
  if (num_requests > 0) shape.num_requests = num_requests;
  std::vector<rerank_case> cases(std::size_t(shape.num_requests));
  for (auto& c : cases) {
    c.query = text_of_tokens(tok, shape.query_tokens, rng);
    for (int d = 0; d < shape.num_documents; ++d) c.documents.push_back(text_of_tokens(tok, shape.document_tokens, rng));
  }
  return cases;
}

}  // namespace inflight::bench
