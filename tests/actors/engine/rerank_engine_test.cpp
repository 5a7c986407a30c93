// Prefill-only scoring requests through the real engine: the yes/no logits are those
// of a plain forward pass, documents score the same alone, together and under every
// policy, prompts are chunked under a small budget, and blocks are freed at once.
#include <cmath>
#include <filesystem>
#include <thread>
#include <unistd.h>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "tests/actors/engine/rerank_fixture.hpp"
#include "tests/shipped_policies.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const std::string query = "which animal says moo?";
const std::vector<std::string> documents = {
    "A cow says moo.", "", "Cats purr when they are content and sometimes when they are not.",
    "The quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up and leaves.",
    "moo moo moo"};

struct scored {
  std::vector<float> row_logits;
  finish_event finish;
};

/// Submits every document at once (or one after another) and waits for all.
std::vector<scored> score_all(const deployment& d, bool one_at_a_time = false) {
  auto eng = start_engine(d);
  const auto r = make_reranker(d, *eng);
  std::vector<std::shared_ptr<collect_sink>> sinks;
  for (const auto& doc : documents) {
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng->submit(scoring_request(r, query, doc), sink).has_value());
    if (one_at_a_time) REQUIRE(sink->wait());
    sinks.push_back(sink);
  }
  std::vector<scored> out;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    out.push_back({s->finish().row_logits, s->finish()});
  }
  CHECK(all_blocks_return(*eng));
  return out;
}

/// The full logits after `prompt`, from the cpu backend alone (no engine, no scheduler).
std::vector<float> plain_forward(const loaded_model& m, const std::vector<token_id>& prompt) {
  auto be = cpu_backend::create(m.weights, kv_cache_config{16, 64, 0});
  REQUIRE(be.has_value());
  step_plan plan;
  seq_step s;
  s.id = 1;
  s.tokens = prompt;
  for (int b = 0; b * 16 < int(prompt.size()); ++b) s.block_table.push_back(b);
  s.do_sample = true;
  plan.seqs.push_back(s);
  auto logits = (*be)->forward(plan);
  REQUIRE(logits.has_value());
  return {logits->begin(), logits->end()};
}

}  // namespace

TEST_CASE("rerank engine: scores are sigmoid(yes - no) of a plain forward pass", "[engine][rerank]") {
  const auto d = qwen3_scoring_deployment("splitfuse", 32);  // the longer prompts take several steps
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  REQUIRE(model->weights->config.qk_norm);
  auto r = reranker::try_create(d.rerank, model->tok);
  REQUIRE(r.has_value());
  const auto got = score_all(d);
  REQUIRE(got.size() == documents.size());
  std::vector<double> scores;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto prompt = r->encode(r->encode_prefix(query), query, documents[i]).tokens;
    const auto logits = plain_forward(*model, prompt);
    const auto& ev = got[i].finish;
    INFO("document " << i << ": " << (ev.cause ? ev.cause->message : std::string()));
    CHECK(ev.reason == finish_reason::stop);
    CHECK(ev.completion_tokens == 0);
    CHECK(ev.prompt_tokens == int(prompt.size()));
    REQUIRE(ev.row_logits.size() == 2);
    CHECK(ev.row_logits[0] == Approx(logits[std::size_t(r->yes_id())]).margin(1e-4));
    CHECK(ev.row_logits[1] == Approx(logits[std::size_t(r->no_id())]).margin(1e-4));
    const double want = 1.0 / (1.0 + std::exp(-(double(logits[std::size_t(r->yes_id())]) -
                                                double(logits[std::size_t(r->no_id())]))));
    CHECK(reranker::score(ev.row_logits[0], ev.row_logits[1]) == Approx(want).margin(1e-4));
    scores.push_back(want);
  }
  // The documents do not all score alike (a constant score would pass the checks above
  // only if the forward pass ignored its input).
  CHECK(*std::max_element(scores.begin(), scores.end()) - *std::min_element(scores.begin(), scores.end()) > 1e-4);
}

TEST_CASE("rerank engine: documents score the same alone, together and under every policy", "[engine][rerank]") {
  const auto together = score_all(qwen3_scoring_deployment("splitfuse", 64));
  const auto alone = score_all(qwen3_scoring_deployment("splitfuse", 64), true);
  for (const std::string& policy : shipped_policies()) {
    INFO(policy);
    for (const int budget : {16, 512}) {
      const auto got = score_all(qwen3_scoring_deployment(policy, budget));
      for (std::size_t i = 0; i < documents.size(); ++i) {
        INFO("budget " << budget << ", document " << i);
        REQUIRE(got[i].row_logits.size() == 2);
        CHECK(got[i].row_logits[0] == Approx(together[i].row_logits[0]).margin(1e-4));
        CHECK(got[i].row_logits[1] == Approx(together[i].row_logits[1]).margin(1e-4));
      }
    }
  }
  for (std::size_t i = 0; i < documents.size(); ++i) {
    CHECK(alone[i].row_logits[0] == Approx(together[i].row_logits[0]).margin(1e-4));
    CHECK(alone[i].row_logits[1] == Approx(together[i].row_logits[1]).margin(1e-4));
  }
}

TEST_CASE("rerank engine: a scoring prompt may fill the context, bad rows are refused", "[engine][rerank]") {
  auto d = qwen3_scoring_deployment();
  d.model.max_context = 40;
  auto eng = start_engine(d);
  generate_request full;
  full.prompt.assign(40, 'x' + 3);
  full.score_rows = {5, 6};
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(full, sink).has_value());
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == finish_reason::stop);
  CHECK(sink->finish().row_logits.size() == 2);
  auto longer = full;
  longer.prompt.push_back(7);
  auto refused = eng->submit(longer, std::make_shared<collect_sink>());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == errc::invalid_argument);
  // A generation still needs room for its first output token.
  generate_request gen;
  gen.prompt = full.prompt;
  CHECK_FALSE(eng->submit(gen, std::make_shared<collect_sink>()).has_value());
  auto bad_row = full;
  bad_row.score_rows = {5, 259};
  auto bad = eng->submit(bad_row, std::make_shared<collect_sink>());
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("259"));
}

TEST_CASE("rerank engine: cancelled scoring requests free their blocks", "[engine][rerank][cancel]") {
  auto d = qwen3_scoring_deployment("splitfuse", 8);  // slow: 8 tokens per step
  auto eng = start_engine(d);
  const auto r = make_reranker(d, *eng);
  std::vector<std::shared_ptr<collect_sink>> sinks;
  std::vector<request_id> ids;
  for (int i = 0; i < 12; ++i) {
    auto sink = std::make_shared<collect_sink>();
    auto id = eng->submit(scoring_request(r, query, documents[3]), sink);
    REQUIRE(id.has_value());
    ids.push_back(*id);
    sinks.push_back(sink);
  }
  for (std::size_t i = 0; i < ids.size(); i += 2) eng->cancel(ids[i]);
  int num_cancelled = 0;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    if (s->finish().reason == finish_reason::cancelled) ++num_cancelled;
    else CHECK(s->finish().row_logits.size() == 2);
  }
  CHECK(num_cancelled > 0);
  CHECK(all_blocks_return(*eng));
}

namespace {

/// Leading tokens two prompts have in common.
int num_common_tokens(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  int n = 0;
  while (n < int(a.size()) && n < int(b.size()) && a[std::size_t(n)] == b[std::size_t(n)]) ++n;
  return n;
}

}  // namespace

TEST_CASE("rerank engine: a query's prefix is computed once with prefix caching, scores equal caching off",
          "[engine][rerank][prefix]") {
  auto d = qwen3_scoring_deployment("splitfuse", 64);
  const int block_size = d.engine.block_size;
  d.engine.enable_prefix_caching = false;
  const auto off_alone = score_all(d, true);
  const auto off_together = score_all(d);
  d.engine.enable_prefix_caching = true;
  const auto on_alone = score_all(d, true);
  const auto on_together = score_all(d);
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  auto r = reranker::try_create(d.rerank, model->tok);
  REQUIRE(r.has_value());
  const auto prefix = r->encode_prefix(query);
  REQUIRE(int(prefix.size()) >= block_size);  // else nothing whole could be shared
  std::vector<std::vector<token_id>> prompts;
  for (const auto& doc : documents) prompts.push_back(r->encode(prefix, query, doc).tokens);
  int num_hit_together = 0;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    INFO("document " << i);
    for (const auto* run : {&off_together, &on_alone, &on_together}) {
      REQUIRE((*run)[i].row_logits.size() == 2);
      CHECK((*run)[i].row_logits[0] == Approx(off_alone[i].row_logits[0]).margin(1e-4));
      CHECK((*run)[i].row_logits[1] == Approx(off_alone[i].row_logits[1]).margin(1e-4));
    }
    CHECK(off_alone[i].finish.cached_tokens == 0);
    CHECK(off_together[i].finish.cached_tokens == 0);
    // One at a time, each document finds the whole blocks it shares with those before
    // it (at least the query's prefix; never its own last token).
    int num_shared = 0;
    for (std::size_t j = 0; j < i; ++j) num_shared = std::max(num_shared, num_common_tokens(prompts[i], prompts[j]));
    num_shared = std::min(num_shared, int(prompts[i].size()) - 1);
    CHECK(on_alone[i].finish.cached_tokens == num_shared / block_size * block_size);
    if (i > 0) CHECK(on_alone[i].finish.cached_tokens >= int(prefix.size()) / block_size * block_size);
    num_hit_together += on_together[i].finish.cached_tokens > 0;
  }
  // All at once: the documents admitted after the first step's find its prefix cached.
  CHECK(num_hit_together > 0);
}

TEST_CASE("rerank engine: a quantized Qwen3 GGUF file scores as the same weights quantized at load",
          "[engine][rerank][gguf]") {
  // The scoring model quantized to q8_0 at load, written as a GGUF file (qwen3
  // architecture, its matrices in q8_0 and its byte vocabulary), then served from that
  // file: the file's tokenizer and mapped matrices must give the scores of the model
  // they were written from.
  auto in_memory = qwen3_scoring_deployment("splitfuse", 32);
  in_memory.model.weight_dtype = "q8_0";
  auto model = load_model(in_memory.model);
  REQUIRE(model.has_value());
  REQUIRE(weight_dtypes_of(*model->weights) == std::vector<weight_dtype>{weight_dtype::q8_0});
  const auto path = std::filesystem::temp_directory_path() /
                    ("inflight_rerank_gguf_" + std::to_string(::getpid()) + ".gguf");
  REQUIRE(try_write_gguf_model(*model->weights, byte_gguf_vocab(model->weights->config.vocab_size), path, {"scorer"})
              .has_value());
  auto from_file = qwen3_scoring_deployment("splitfuse", 32);
  from_file.model.format = "auto";
  from_file.model.path = path.string();
  auto mapped = load_model(from_file.model);
  REQUIRE(mapped.has_value());
  CHECK(weight_dtypes_of(*mapped->weights) == std::vector<weight_dtype>{weight_dtype::q8_0});
  CHECK(mapped->weights->config.qk_norm);
  const auto want = score_all(in_memory);
  const auto got = score_all(from_file);
  std::filesystem::remove(path);
  REQUIRE(got.size() == want.size());
  std::vector<double> scores;
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("document " << i);
    CHECK(got[i].finish.reason == finish_reason::stop);
    CHECK(got[i].finish.prompt_tokens == want[i].finish.prompt_tokens);
    REQUIRE(got[i].row_logits.size() == 2);
    REQUIRE(want[i].row_logits.size() == 2);
    CHECK(got[i].row_logits[0] == Approx(want[i].row_logits[0]).margin(1e-4));
    CHECK(got[i].row_logits[1] == Approx(want[i].row_logits[1]).margin(1e-4));
    scores.push_back(reranker::score(got[i].row_logits[0], got[i].row_logits[1]));
  }
  CHECK(*std::max_element(scores.begin(), scores.end()) - *std::min_element(scores.begin(), scores.end()) > 1e-4);
}
