// libFuzzer harness: request bodies of /v1/completions, /v1/chat/completions,
// /tokenize, /detokenize, /v1/rerank, /v1/score and /v1/embeddings, through the gateway's parsers exactly as the HTTP session
// runs them (text -> JSON -> request). Every outcome must be a valid request or a
// well-formed error; the input is one body, tried on every route.
#include "actors/gateway/embed_request.hpp"
#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/score_request.hpp"
#include "core/engine/sampling/sampler.hpp"
#include "tests/fuzz/gateway_model.hpp"

using namespace inflight;
using namespace inflight::gateway;

namespace {

void check_request(const openai_request& r, const served_model& m) {
  FUZZ_CHECK(r.num_choices() >= 1 && r.num_choices() <= m.max_choices);
  FUZZ_CHECK(r.num_top_logprobs >= 0 && r.num_top_logprobs <= max_top_logprobs);
  for (int i = 0; i < r.num_choices(); ++i) {
    const auto choice = r.choice_request(i);
    fuzz::check_generate_request(choice, m);
    FUZZ_CHECK(choice.prompt == r.prompts[static_cast<std::size_t>(i / r.n)]);
  }
}

void try_route(const nlohmann::json& body, api_kind kind, const served_model& m) {
  auto r = try_parse_request(body, kind, m);
  if (r) {
    check_request(*r, m);
  } else {
    fuzz::note(r.error().message);
    fuzz::check_api_error(r.error());
  }
}

void check_scoring(const api_result<score_request>& r, const served_model& m) {
  if (!r) {
    fuzz::note(r.error().message);
    fuzz::check_api_error(r.error());
    return;
  }
  FUZZ_CHECK(r->num_pairs() >= 1 && r->num_pairs() <= m.max_rerank_documents);
  FUZZ_CHECK(r->top_n >= 0);
  for (const auto& prompt : r->prompts) fuzz::check_prompt(prompt, m);
}

void check_embeddings(const nlohmann::json& body, const served_model& m) {
  auto r = try_parse_embeddings(body, m);
  if (!r) {
    fuzz::note(r.error().message);
    fuzz::check_api_error(r.error());
    return;
  }
  FUZZ_CHECK(m.embeddings.has_value());
  fuzz::check_embed_inputs(r->inputs, m);
  FUZZ_CHECK(r->dimensions >= 0 && r->dimensions <= m.embedding_width);
  FUZZ_CHECK(r->dimensions == 0 || m.embeddings->matryoshka);
  // The response of unit vectors serialises, in either encoding.
  std::vector<std::vector<float>> embeddings(r->inputs.size(), std::vector<float>(4, 0.5f));
  const auto back = nlohmann::json::parse(dump_json(embeddings_response(m.name, *r, embeddings)), nullptr, false);
  FUZZ_CHECK(!back.is_discarded() && back["data"].size() == r->inputs.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& models = fuzz::served_models();
  auto body = try_parse_json(std::string(fuzz::as_text(data, size)));
  if (!body) {
    fuzz::check_api_error(body.error());
    return 0;
  }
  try_route(*body, api_kind::completion, models[0]);
  for (const auto& m : models) try_route(*body, api_kind::chat, m);

  if (auto ids = try_parse_tokenize(*body, models[0])) {
    for (token_id id : *ids) FUZZ_CHECK(id >= 0 && id < models[0].vocab_size);
  } else {
    fuzz::check_api_error(ids.error());
  }
  if (auto ids = try_parse_detokenize(*body, models[0])) {
    const auto text = detokenize(models[0], *ids);
    const auto back = nlohmann::json::parse(dump_json({{"prompt", text}}), nullptr, false);
    FUZZ_CHECK(!back.is_discarded());
  } else {
    fuzz::check_api_error(ids.error());
  }
  const auto& scoring = models.back();
  check_scoring(try_parse_rerank(*body, scoring), scoring);
  check_scoring(try_parse_score(*body, scoring), scoring);
  check_embeddings(*body, scoring);
  check_embeddings(*body, models[0]);  // not served: always an error
  return 0;
}
