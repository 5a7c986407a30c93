// Prefill-only embedding requests through the real engine (a Qwen3-shaped dummy model):
// every input's pooled hidden state is that of a plain forward pass on the cpu backend,
// alone or batched with other inputs and a generation, chunked under a small budget,
// with prefix caching on and off, under every shipped policy; KV blocks all come back.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "tests/actors/engine/rerank_fixture.hpp"
#include "tests/shipped_policies.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

// Two share a 20-byte prefix (a whole block of 16 and more), so caching has something to find.
const std::vector<std::string> inputs = {
    "Instruct: find animals\nQuery: which animal says moo?", "Instruct: find animals\nQuery: what purrs?", "x",
    "The quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up and leaves.",
    "moo moo moo"};

deployment embed_deployment(const std::string& policy, int budget, pooling_kind pooling, bool is_caching) {
  auto d = qwen3_scoring_deployment(policy, budget);
  d.embeddings.pooling = pooling;
  d.engine.enable_prefix_caching = is_caching;
  return d;
}

generate_request embed_request_of(const engine& eng, const std::string& text, pooling_kind pooling) {
  generate_request req;
  req.prompt = eng.model().tok->encode(text, true);
  req.pooling = pooling;
  return req;
}

/// Every input at once (with a generation alongside), or one after another.
std::vector<finish_event> embed_all(const deployment& d, bool one_at_a_time = false) {
  auto eng = start_engine(d);
  std::vector<std::shared_ptr<collect_sink>> sinks;
  auto generation = std::make_shared<collect_sink>();
  if (!one_at_a_time) {
    auto gen = greedy_request(*eng, "Once upon a time", 8);
    gen.params.ignore_eos = true;  // random weights: an early EOS would make the count a matter of luck
    REQUIRE(eng->submit(gen, generation).has_value());
  }
  for (const auto& text : inputs) {
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng->submit(embed_request_of(*eng, text, *d.embeddings.pooling), sink).has_value());
    if (one_at_a_time) REQUIRE(sink->wait());
    sinks.push_back(sink);
  }
  std::vector<finish_event> out;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    out.push_back(s->finish());
  }
  if (!one_at_a_time) {
    REQUIRE(generation->wait());
    CHECK(generation->finish().completion_tokens == 8);
    CHECK(generation->finish().embedding.empty());
  }
  CHECK(all_blocks_return(*eng));  // nothing kept after the step that finished them
  return out;
}

/// The pooled final hidden state of `prompt` from the cpu backend alone: one step over
/// the whole prompt, no engine, no scheduler.
std::vector<float> plain_pooled(const loaded_model& m, const std::vector<token_id>& prompt, pooling_kind pooling) {
  auto be = cpu_backend::create(m.weights, kv_cache_config{16, 64, 0});
  REQUIRE(be.has_value());
  step_plan plan;
  seq_step s;
  s.id = 1;
  s.tokens = prompt;
  for (int b = 0; b * 16 < int(prompt.size()); ++b) s.block_table.push_back(b);
  s.hidden = pooling == pooling_kind::mean    ? hidden_output::sum
             : pooling == pooling_kind::first ? hidden_output::first
                                              : hidden_output::last;
  plan.seqs.push_back(s);
  auto r = (*be)->execute(plan);
  REQUIRE(r.has_value());
  REQUIRE(r->hidden.size() == 1);
  auto pooled = r->hidden[0].values;
  if (pooling == pooling_kind::mean)
    for (float& v : pooled) v /= float(prompt.size());
  return pooled;
}

double norm_of(const std::vector<float>& v) {
  double s = 0;
  for (const float x : v) s += double(x) * double(x);
  return std::sqrt(s);
}

/// |a - b| / |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
  return std::sqrt(d) / norm_of(b);
}

std::vector<std::vector<float>> plain_embeddings(const deployment& d) {
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  REQUIRE(model->weights->config.qk_norm);
  std::vector<std::vector<float>> out;
  for (const auto& text : inputs) out.push_back(plain_pooled(*model, model->tok->encode(text, true), *d.embeddings.pooling));
  return out;
}

}  // namespace

TEST_CASE("embed engine: the pooled state of a plain forward pass, alone and batched, normalised to 1",
          "[engine][embeddings]") {
  for (const auto pooling : {pooling_kind::last, pooling_kind::mean, pooling_kind::first}) {
    INFO("pooling " << to_string(pooling));
    const auto d = embed_deployment("splitfuse", 16, pooling, true);  // the longer inputs take several steps
    const auto want = plain_embeddings(d);
    for (const bool one_at_a_time : {true, false}) {
      INFO((one_at_a_time ? "alone" : "batched"));
      const auto got = embed_all(d, one_at_a_time);
      REQUIRE(got.size() == inputs.size());
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        INFO("input " << i << ": " << (got[i].cause ? got[i].cause->message : std::string()));
        CHECK(got[i].reason == finish_reason::stop);
        CHECK(got[i].completion_tokens == 0);
        CHECK(got[i].row_logits.empty());
        REQUIRE(got[i].embedding.size() == std::size_t(d.model.dummy.hidden_size));
        CHECK(relative_difference(got[i].embedding, want[i]) < 1e-5);
        const auto unit = finish_embedding(got[i].embedding, 0, true);
        CHECK(std::abs(norm_of(unit) - 1.0) < 1e-6);
        CHECK(relative_difference(unit, finish_embedding(want[i], 0, true)) < 1e-5);
      }
      // Inputs differ, and so do their embeddings (a constant would pass the checks above
      // only if the forward pass ignored its input); but in a causal model the first
      // token's state sees only that token, and every input starts with BOS.
      if (pooling == pooling_kind::first) CHECK(relative_difference(got[0].embedding, got[4].embedding) < 1e-6);
      else CHECK(relative_difference(got[0].embedding, got[4].embedding) > 1e-3);
    }
  }
}

TEST_CASE("embed engine: the same under every policy, with prefix caching on and off", "[engine][embeddings][prefix]") {
  for (const auto pooling : {pooling_kind::last, pooling_kind::mean, pooling_kind::first}) {
    const auto want = plain_embeddings(embed_deployment("splitfuse", 16, pooling, false));
    for (const std::string& policy : shipped_policies()) {
      for (const bool is_caching : {false, true}) {
        INFO("pooling " << to_string(pooling) << ", policy " << policy << ", prefix caching " << is_caching);
        const auto got = embed_all(embed_deployment(policy, 16, pooling, is_caching));
        int num_cached = 0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          INFO("input " << i << ": " << (got[i].cause ? got[i].cause->message : std::string()));
          REQUIRE(got[i].embedding.size() == want[i].size());
          CHECK(relative_difference(got[i].embedding, want[i]) < 1e-5);
          num_cached += got[i].cached_tokens;
        }
        // Only last pooling may start from cached blocks.
        if (!is_caching || pooling != pooling_kind::last) CHECK(num_cached == 0);
      }
    }
  }
}

TEST_CASE("embed engine: with last pooling a shared prefix comes from the cache", "[engine][embeddings][prefix]") {
  const auto d = embed_deployment("splitfuse", 512, pooling_kind::last, true);
  const auto want = plain_embeddings(d);
  const auto got = embed_all(d, true);  // one at a time: input 1 finds input 0's whole blocks
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  const auto a = model->tok->encode(inputs[0], true), b = model->tok->encode(inputs[1], true);
  int num_common = 0;
  while (a[std::size_t(num_common)] == b[std::size_t(num_common)]) ++num_common;
  const int block_size = d.engine.block_size;
  REQUIRE(num_common >= block_size);
  CHECK(got[0].cached_tokens == 0);
  CHECK(got[1].cached_tokens == std::min(num_common, int(b.size()) - 1) / block_size * block_size);
  for (std::size_t i = 0; i < inputs.size(); ++i) CHECK(relative_difference(got[i].embedding, want[i]) < 1e-5);
}

TEST_CASE("embed engine: an input may fill the context, cancelled inputs free their blocks", "[engine][embeddings]") {
  auto d = embed_deployment("splitfuse", 8, pooling_kind::mean, true);  // slow: 8 tokens per step
  d.model.max_context = 40;
  auto eng = start_engine(d);
  generate_request full;
  full.prompt.assign(40, 'x' + 3);
  full.pooling = pooling_kind::last;
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(full, sink).has_value());
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == finish_reason::stop);
  CHECK(sink->finish().embedding.size() == std::size_t(d.model.dummy.hidden_size));
  auto longer = full;
  longer.prompt.push_back(7);
  CHECK_FALSE(eng->submit(longer, std::make_shared<collect_sink>()).has_value());
  std::vector<std::shared_ptr<collect_sink>> sinks;
  std::vector<request_id> ids;
  for (int i = 0; i < 12; ++i) {
    auto s = std::make_shared<collect_sink>();
    generate_request req;
    req.prompt.assign(36, token_id('a' + 3 + i));
    req.pooling = pooling_kind::mean;
    auto id = eng->submit(req, s);
    REQUIRE(id.has_value());
    ids.push_back(*id);
    sinks.push_back(s);
  }
  for (std::size_t i = 0; i < ids.size(); i += 2) eng->cancel(ids[i]);
  int num_cancelled = 0;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    if (s->finish().reason == finish_reason::cancelled) ++num_cancelled;
    else CHECK(s->finish().embedding.size() == std::size_t(d.model.dummy.hidden_size));
  }
  CHECK(num_cancelled > 0);
  CHECK(all_blocks_return(*eng));
}

TEST_CASE("embed engine: a quantized Qwen3 GGUF file embeds as the weights it was written from",
          "[engine][embeddings][gguf]") {
  // The Qwen3-shaped model quantized to q8_0 at load, written as a GGUF file (qwen3
  // architecture, q8_0 matrices, its byte vocabulary) and served from that file: the
  // file's tokenizer and mapped matrices give the embeddings of the model in memory.
  auto in_memory = embed_deployment("splitfuse", 32, pooling_kind::last, false);
  in_memory.model.weight_dtype = "q8_0";
  auto model = load_model(in_memory.model);
  REQUIRE(model.has_value());
  REQUIRE(weight_dtypes_of(*model->weights) == std::vector<weight_dtype>{weight_dtype::q8_0});
  const auto path = std::filesystem::temp_directory_path() /
                    ("inflight_embed_gguf_" + std::to_string(::getpid()) + ".gguf");
  REQUIRE(try_write_gguf_model(*model->weights, byte_gguf_vocab(model->weights->config.vocab_size), path, {"embedder"})
              .has_value());
  auto from_file = embed_deployment("splitfuse", 32, pooling_kind::last, false);
  from_file.model.format = "auto";
  from_file.model.path = path.string();
  const auto want = embed_all(in_memory);
  const auto got = embed_all(from_file);
  std::filesystem::remove(path);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("input " << i);
    CHECK(got[i].prompt_tokens == want[i].prompt_tokens);
    REQUIRE(!want[i].embedding.empty());
    REQUIRE(got[i].embedding.size() == want[i].embedding.size());
    for (std::size_t j = 0; j < want[i].embedding.size(); ++j) {
      CHECK(got[i].embedding[j] == Approx(want[i].embedding[j]).margin(1e-5));
    }
  }
  // Different inputs embed differently (a model that ignored its input would pass the above).
  float distance = 0;
  for (std::size_t j = 0; j < got[0].embedding.size(); ++j)
    distance = std::max(distance, std::abs(got[0].embedding[j] - got[3].embedding[j]));
  CHECK(distance > 1e-3f);
}
