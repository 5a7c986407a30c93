// Prefix caching through the real engine (actors, CPU backend): greedy outputs are the
// same with caching on and off, alone and batched, with and without preemption, on
// stories260K and on random weights; hits show in usage and in the metrics.
#include <filesystem>
#include <fstream>

#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

struct outcome {
  std::vector<token_id> tokens;
  int cached_tokens = 0;
};

struct run_result {
  std::vector<outcome> outcomes;
  engine_gauges gauges;
};

/// Runs `prompts` greedily on a fresh engine: all at once (batched) or one after the
/// other, each submitted when the one before has finished (alone).
run_result run(const deployment& d, const std::vector<std::vector<token_id>>& prompts, int max_tokens,
               bool is_batched) {
  auto eng = start_engine(d);
  std::vector<std::shared_ptr<collect_sink>> sinks;
  for (const auto& p : prompts) {
    generate_request r;
    r.prompt = p;
    r.params.temperature = 0.0f;
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng->submit(r, sink).has_value());
    sinks.push_back(sink);
    if (!is_batched) REQUIRE(sink->wait());
  }
  run_result out;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    CHECK(s->finish().reason == finish_reason::length);
    out.outcomes.push_back({s->tokens(), s->finish().cached_tokens});
  }
  CHECK(all_blocks_return(*eng));
  out.gauges = eng->snapshot().gauges;
  return out;
}

std::vector<std::vector<token_id>> tokens_of(const std::vector<run_result>& runs, std::size_t i) {
  std::vector<std::vector<token_id>> out;
  for (const auto& o : runs.at(i).outcomes) out.push_back(o.tokens);
  return out;
}

/// The checks every model gets: on == off, alone and batched (and preempted), and the
/// sequential run with caching on did hit.
void check_on_off(deployment d, const std::vector<std::vector<token_id>>& prompts, int max_tokens,
                  int num_shared_tokens, int small_kv_blocks) {
  d.engine.enable_prefix_caching = false;
  const auto off = run(d, prompts, max_tokens, false);
  for (const auto& o : off.outcomes) CHECK(o.cached_tokens == 0);
  CHECK(off.gauges.num_prefix_cache_hits == 0);
  d.engine.enable_prefix_caching = true;
  const auto alone = run(d, prompts, max_tokens, false);
  const auto batched = run(d, prompts, max_tokens, true);
  d.engine.kv_blocks = small_kv_blocks;  // preemption: recomputes find their own blocks
  const auto tight = run(d, prompts, max_tokens, true);
  const std::vector<run_result> runs{off, alone, batched, tight};
  for (std::size_t i = 1; i < runs.size(); ++i) {
    INFO("run " << i << " (1 alone, 2 batched, 3 preempting) against caching off");
    CHECK(tokens_of(runs, i) == tokens_of(runs, 0));
  }
  // alone, every request after the first finds the shared prefix (whole blocks of 16)
  for (std::size_t i = 1; i < prompts.size(); ++i) CHECK(alone.outcomes[i].cached_tokens >= num_shared_tokens / 16 * 16);
  CHECK(alone.gauges.num_prefix_cache_hits > 0);
  CHECK(alone.gauges.num_prefix_cache_queries >= alone.gauges.num_prefix_cache_hits);
  CHECK(tight.gauges.num_preemptions > 0);
}

/// Four byte-level prompts sharing a 170-byte prefix through check_on_off, on the
/// deployment `eng` was started from (released before the runs).
void check_byte_prompts_on_off(const deployment& d, std::unique_ptr<engine> eng) {
  const std::string shared(90, 'a');
  std::string text = "The quick brown fox jumps over the lazy dog while the cat sleeps by the warm fire. ";
  std::vector<std::vector<token_id>> prompts;
  for (const char* end : {"Why?", "And then?", "What next", "Tell me more, please"})
    prompts.push_back(eng->model().tok->encode(text + shared + end, true));
  const int num_shared = static_cast<int>(eng->model().tok->encode(text + shared, true).size());
  eng.reset();
  check_on_off(d, prompts, 24, num_shared - 1, 16);
}

}  // namespace

TEST_CASE("prefix caching: stories260K greedy text is the same with caching on and off", "[engine][prefix]") {
  auto d = stories_deployment("splitfuse", 64, 256, 8);
  if (d.model.path.empty()) return;
  auto eng = start_engine(d);
  const auto& tok = *eng->model().tok;
  const std::string shared = "Once upon a time, there was a little girl named Lily. She loved to play outside "
                             "in the park with her mom and her big red ball.";
  std::vector<std::vector<token_id>> prompts;
  for (const char* end : {" One day", " She saw a dog", " The sun was", " Lily was happy because"})
    prompts.push_back(tok.encode(shared + end, true));
  const int num_shared = static_cast<int>(tok.encode(shared, true).size());
  REQUIRE(num_shared >= 32);
  eng.reset();
  check_on_off(d, prompts, 40, num_shared - 1, 12);
}

TEST_CASE("prefix caching: a follow-up turn reuses the blocks of the generated tokens", "[engine][prefix]") {
  auto d = stories_deployment("splitfuse", 64, 256, 8);
  if (d.model.path.empty()) return;
  auto eng = start_engine(d);
  const auto first = greedy_request(*eng, "Once upon a time, there was a little boy named Tom.", 40);
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(first, sink).has_value());
  REQUIRE(sink->wait());
  // the next turn resends the history: prompt + output + a few new tokens
  auto history = first.prompt;
  const auto output = sink->tokens();
  history.insert(history.end(), output.begin(), output.end());
  auto more = eng->model().tok->encode(" Then he went home.", false);
  history.insert(history.end(), more.begin(), more.end());
  auto second = first;
  second.prompt = history;
  second.params.max_tokens = 20;
  auto sink2 = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(second, sink2).has_value());
  REQUIRE(sink2->wait());
  // whole blocks of prompt + output were computed in the first turn (the last output
  // token was sampled but never computed)
  const int computed = static_cast<int>(first.prompt.size() + output.size()) - 1;
  CHECK(sink2->finish().cached_tokens == computed / 16 * 16);
  CHECK(sink2->finish().cached_tokens > static_cast<int>(first.prompt.size()));
  eng.reset();
  d.engine.enable_prefix_caching = false;
  auto cold = start_engine(d);
  auto sink3 = std::make_shared<collect_sink>();
  REQUIRE(cold->submit(second, sink3).has_value());
  REQUIRE(sink3->wait());
  CHECK(sink3->tokens() == sink2->tokens());
  CHECK(sink3->finish().cached_tokens == 0);
}

TEST_CASE("prefix caching: random weights give the same greedy tokens with caching on and off",
          "[engine][prefix]") {
  deployment d;  // dummy weights, byte-level tokenizer
  d.model.format = "dummy";
  d.model.dummy.num_layers = 2;
  d.engine.threads = 1;
  d.engine.kv_blocks = 128;
  d.engine.max_num_batched_tokens = 96;
  d.engine.max_num_seqs = 8;
  d.scheduler.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  auto eng = start_engine(d);
  check_byte_prompts_on_off(d, std::move(eng));
}

TEST_CASE("prefix caching: a Gemma 3 model with 8-key windows gives the same greedy tokens with caching on and off",
          "[engine][prefix][gemma]") {
  // Prompts of about 180 tokens over layers that read 8 keys (one global layer in two):
  // cached blocks, batched steps and preemption recomputes all read the windows alike.
  deployment d;
  d.model.format = "dummy";
  const auto config_path = std::filesystem::temp_directory_path() / "inflight_gemma3_window_config.json";
  std::ofstream(config_path) << R"({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "vocab_size": 259, "max_position_embeddings": 512, "sliding_window": 8, "sliding_window_pattern": 2,
      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 16,
      "hidden_activation": "gelu_pytorch_tanh"})";
  d.model.config_json = config_path.string();
  d.engine.threads = 1;
  d.engine.kv_blocks = 128;
  d.engine.max_num_batched_tokens = 96;
  d.engine.max_num_seqs = 8;
  d.scheduler.plugin_dir = INFLIGHT_TEST_PLUGIN_DIR;
  auto eng = start_engine(d);
  REQUIRE(eng->model().weights->config.sliding_window == 8);
  REQUIRE(eng->model().weights->config.layer_windowed(0));
  check_byte_prompts_on_off(d, std::move(eng));
}
