// The fan-out of prefill-only calls (rerank, score, embeddings): a call that was cancelled
// emits nothing afterwards, whatever finishes of its engine requests are still on their
// way (a WebSocket may already run a new call under the same id).
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "actors/gateway/embed_call.hpp"
#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/prefill_fanout.hpp"
#include "actors/gateway/score_call.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;

namespace {

/// An engine that takes every request and keeps its sink; the test finishes them.
class held_engine final : public engine_api {
 public:
  result<request_id> submit(generate_request request, std::shared_ptr<request_sink> sink) override {
    requests.push_back(std::move(request));
    sinks.push_back(std::move(sink));
    return request_id(sinks.size());
  }
  void cancel(request_id id) override { cancelled.push_back(id); }
  engine_snapshot snapshot() const override { return {}; }
  void shutdown(double) override {}
  engine_health health() const override { return {}; }
  const loaded_model& model() const override { return model_; }
  const deployment& settings() const override { return settings_; }
  engine_metrics& metrics() override { return metrics_; }
  std::string render_metrics() const override { return {}; }
  void set_step_sink(std::shared_ptr<step_sink>) override {}
  bool has_step_sink() const override { return false; }

  std::vector<lora_adapter_info> lora_adapters() const override { return {{"sql", "/adapters/sql", true, 8}}; }

  std::vector<generate_request> requests;
  std::vector<std::shared_ptr<request_sink>> sinks;
  std::vector<request_id> cancelled;

 private:
  loaded_model model_;
  deployment settings_;
  engine_metrics metrics_;
};

finish_event finished(finish_reason reason) {
  finish_event ev;
  ev.reason = reason;
  if (reason == finish_reason::stop) ev.row_logits = {1.0f, 0.0f};
  return ev;
}

}  // namespace

TEST_CASE("prefill fanout: after cancel nothing is emitted, and a failure is emitted once", "[gateway]") {
  held_engine eng;
  gateway_state state(eng, served_model{}, server_settings{}, "test");
  const post_fn now = [](std::function<void()> task) { task(); };
  int num_emits = 0;
  const auto count = [&](api_result<nlohmann::json>) { ++num_emits; };
  const auto make = [](int) { return generate_request{}; };
  {
    prefill_fanout fanout(state, now, count);
    REQUIRE_FALSE(fanout.try_submit(3, make, [&](int i, const finish_event& ev) { fanout.try_accept(i, ev); }));
    fanout.cancel();
    CHECK(eng.cancelled.size() == 3);
    // The cancelled requests' finishes arrive later: the ended call says nothing.
    for (auto& sink : eng.sinks) sink->on_finish(finished(finish_reason::cancelled));
    CHECK(num_emits == 0);
    CHECK(fanout.is_done());
  }
  eng.sinks.clear();
  {
    prefill_fanout fanout(state, now, count);
    REQUIRE_FALSE(fanout.try_submit(3, make, [&](int i, const finish_event& ev) { fanout.try_accept(i, ev); }));
    eng.sinks[0]->on_finish(finished(finish_reason::error));  // the first failure ends the call, once
    CHECK(num_emits == 1);
    eng.sinks[1]->on_finish(finished(finish_reason::cancelled));
    eng.sinks[2]->on_finish(finished(finish_reason::stop));
    CHECK(num_emits == 1);
  }
}

TEST_CASE("prefill fanout: rerank and embeddings through a LoRA adapter submit requests that name it",
          "[gateway][lora]") {
  held_engine eng;
  auto m = test::byte_model({.has_grammars = false});
  rerank_settings rs;
  rs.prompt_template = "Q:{query}\nD:{document}\nA:";
  rs.yes_word = "y";
  rs.no_word = "n";
  test::serve_reranking(m, rs);
  embeddings_settings es;
  test::serve_embeddings(m, es, 8);
  gateway_state state(eng, m, server_settings{}, "test");  // its adapters: the engine's
  const post_fn now = [](std::function<void()> task) { task(); };
  std::vector<nlohmann::json> bodies;
  const auto keep = [&](api_result<nlohmann::json> out) {
    REQUIRE(out.has_value());
    bodies.push_back(*out);
  };

  auto rerank = try_parse_rerank(nlohmann::json::parse(R"({"model": "sql", "query": "a", "documents": ["b", "c"]})"),
                                 state.model());
  REQUIRE(rerank.has_value());
  auto scoring = std::make_shared<score_call>(state, std::move(*rerank), now, keep);
  REQUIRE_FALSE(scoring->try_start());
  auto embed = try_parse_embeddings(nlohmann::json::parse(R"({"model": "sql", "input": "ab"})"), state.model());
  REQUIRE(embed.has_value());
  auto embedding = std::make_shared<embed_call>(state, std::move(*embed), now, keep);
  REQUIRE_FALSE(embedding->try_start());
  REQUIRE(eng.requests.size() == 3);
  for (const auto& r : eng.requests) CHECK(r.adapter == "sql");

  // Their answers carry the adapter's name as the model, as completions do.
  eng.sinks[0]->on_finish(finished(finish_reason::stop));
  eng.sinks[1]->on_finish(finished(finish_reason::stop));
  finish_event hidden;
  hidden.embedding.assign(8, 0.5f);
  eng.sinks[2]->on_finish(hidden);
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[0]["model"] == "sql");
  CHECK(bodies[1]["model"] == "sql");
}
