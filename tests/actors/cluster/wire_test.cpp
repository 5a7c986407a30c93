// What crosses between processes (actors/cluster/wire.hpp): every field of a request and of its
// events survives CAF's binary serialization, and a request sent to an actor published
// by another actor system over the middleman (loopback TCP) arrives whole.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <vector>

#include "actors/cluster/remote_engine.hpp"
#include "actors/cluster/wire.hpp"

using namespace inflight;

namespace {

/// Every field set to a value other than its default.
wire_request full_request() {
  wire_request w;
  auto& r = w.request;
  r.prompt = {1, 42, 31999};
  r.params.temperature = 0.25f;
  r.params.top_k = 7;
  r.params.top_p = 0.5f;
  r.params.min_p = 0.125f;
  r.params.repetition_penalty = 1.5f;
  r.params.presence_penalty = -0.5f;
  r.params.frequency_penalty = 0.75f;
  r.params.max_tokens = 123;
  r.params.ignore_eos = true;
  r.params.stop_token_ids = {2, 3};
  r.params.logprobs = 4;
  r.params.logit_bias = {{17, -100.0f}, {18, 2.5f}};
  r.seed = 987654321987ull;
  r.stop = {"\n\n", "END"};
  r.priority = -3;
  r.cache_salt = "tenant-a";
  r.timeout_s = 12.5;
  r.score_rows = {5, 6};
  r.pooling = pooling_kind::mean;
  w.grammar = grammar_spec{grammar_kind::json_schema, R"({"type":"object"})"};
  return w;
}

void check_same(const wire_request& a, const wire_request& b) {
  const auto &x = a.request, &y = b.request;
  CHECK(x.prompt == y.prompt);
  CHECK(x.params.temperature == y.params.temperature);
  CHECK(x.params.top_k == y.params.top_k);
  CHECK(x.params.top_p == y.params.top_p);
  CHECK(x.params.min_p == y.params.min_p);
  CHECK(x.params.repetition_penalty == y.params.repetition_penalty);
  CHECK(x.params.presence_penalty == y.params.presence_penalty);
  CHECK(x.params.frequency_penalty == y.params.frequency_penalty);
  CHECK(x.params.max_tokens == y.params.max_tokens);
  CHECK(x.params.ignore_eos == y.params.ignore_eos);
  CHECK(x.params.stop_token_ids == y.params.stop_token_ids);
  CHECK(x.params.logprobs == y.params.logprobs);
  CHECK(x.params.logit_bias == y.params.logit_bias);
  CHECK(x.seed == y.seed);
  CHECK(x.stop == y.stop);
  CHECK(x.priority == y.priority);
  CHECK(x.cache_salt == y.cache_salt);
  CHECK(x.timeout_s == y.timeout_s);
  CHECK(x.score_rows == y.score_rows);
  CHECK(x.pooling == y.pooling);
  CHECK(a.grammar == b.grammar);
}

finish_event full_finish() {
  finish_event f;
  f.reason = finish_reason::error;
  f.cause = error{errc::backend_error, "cuBLAS failed"};
  f.text = "tail";
  f.prompt_tokens = 11;
  f.completion_tokens = 22;
  f.cached_tokens = 8;
  f.stop_string = "END";
  f.stop_token = 42;
  f.timings = {1.5, 2.5, 3.5, 4.5};
  f.row_logits = {0.5f, -1.0f};
  f.embedding = {0.25f, 0.125f, -2.0f};
  return f;
}

void check_same(const finish_event& a, const finish_event& b) {
  CHECK(a.reason == b.reason);
  REQUIRE(a.cause.has_value() == b.cause.has_value());
  if (a.cause) {
    CHECK(a.cause->code == b.cause->code);
    CHECK(a.cause->message == b.cause->message);
  }
  CHECK(a.text == b.text);
  CHECK(a.prompt_tokens == b.prompt_tokens);
  CHECK(a.completion_tokens == b.completion_tokens);
  CHECK(a.cached_tokens == b.cached_tokens);
  CHECK(a.stop_string == b.stop_string);
  CHECK(a.stop_token == b.stop_token);
  CHECK(a.timings.queue_ms == b.timings.queue_ms);
  CHECK(a.timings.ttft_ms == b.timings.ttft_ms);
  CHECK(a.timings.tpot_ms == b.timings.tpot_ms);
  CHECK(a.timings.e2e_ms == b.timings.e2e_ms);
  CHECK(a.row_logits == b.row_logits);
  CHECK(a.embedding == b.embedding);
}

template <class T>
T round_trip(T value) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE(!sink(value));
  T out;
  caf::binary_deserializer source{nullptr, buf};
  REQUIRE(!source(out));
  return out;
}


}  // namespace

TEST_CASE("wire: every field of a request and of its events survives serialization", "[actors][wire]") {
  check_same(full_request(), round_trip(full_request()));
  // Unset optionals stay unset (not a default value).
  wire_request bare;
  bare.request.prompt = {1};
  const auto back = round_trip(bare);
  CHECK_FALSE(back.request.seed.has_value());
  CHECK_FALSE(back.request.pooling.has_value());
  CHECK_FALSE(back.grammar.has_value());

  check_same(full_finish(), round_trip(full_finish()));
  CHECK_FALSE(round_trip(finish_event{}).cause.has_value());
  CHECK_FALSE(round_trip(finish_event{}).stop_token.has_value());

  token_event t;
  t.text = "h\xc3\xa9llo";
  t.token_ids = {5, 6};
  t.logprobs = {{9, 5, -0.5f, {{5, -0.5f}, {7, -1.25f}}}, {9, 6, -0.25f, {}}};
  t.index = 3;
  const auto u = round_trip(t);
  CHECK(u.text == t.text);
  CHECK(u.token_ids == t.token_ids);
  REQUIRE(u.logprobs.size() == 2);
  CHECK(u.logprobs[0].token == 5);
  CHECK(u.logprobs[0].logprob == -0.5f);
  REQUIRE(u.logprobs[0].top_logprobs.size() == 2);
  CHECK(u.logprobs[0].top_logprobs[1].token == 7);
  CHECK(u.logprobs[0].top_logprobs[1].logprob == -1.25f);
  CHECK(u.index == 3);

  engine_health h{false, true, 4, 9, "step failed"};
  const auto g = round_trip(h);
  CHECK(g.is_healthy == false);
  CHECK(g.is_stopped == true);
  CHECK(g.num_consecutive_failed_steps == 4);
  CHECK(g.num_failed_steps == 9);
  CHECK(g.last_step_error == "step failed");
}

TEST_CASE("wire: a request crosses to an actor published by another actor system", "[actors][wire]") {
  wire_system_config engine_cfg, gateway_cfg;
  caf::actor_system engine_side{engine_cfg};
  caf::actor_system gateway_side{gateway_cfg};
  // Stands in for an engine: answers a request with its finish event, built from what arrived.
  auto echo = engine_side.spawn([]() -> caf::behavior {
    return {[](const wire_request& w) {
      finish_event f;
      f.reason = finish_reason::length;
      f.prompt_tokens = static_cast<int>(w.request.prompt.size());
      f.text = w.grammar ? w.grammar->text : "";
      f.cause = error{errc::invalid_argument, w.request.cache_salt};
      return caf::make_message(w, f);
    }};
  });
  auto port = engine_side.middleman().publish(echo, 0, "127.0.0.1");
  REQUIRE(port);
  auto remote = gateway_side.middleman().remote_actor("127.0.0.1", *port);
  REQUIRE(remote);
  caf::scoped_actor self{gateway_side};
  bool answered = false;
  self->request(*remote, std::chrono::seconds(30), full_request())
      .receive(
          [&](const wire_request& back, const finish_event& f) {
            answered = true;
            check_same(full_request(), back);
            CHECK(f.reason == finish_reason::length);
            CHECK(f.prompt_tokens == 3);
            CHECK(f.text == R"({"type":"object"})");
            REQUIRE(f.cause);
            CHECK(f.cause->message == "tenant-a");
          },
          [&](caf::error& e) { FAIL("no answer: " << gateway_side.render(e)); });
  CHECK(answered);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}

TEST_CASE("wire: an engine's cache and load report survives serialization", "[actors][wire]") {
  engine_report r;
  r.is_full = true;
  r.added = {{1, 2}, {0xffffffffffffffffull, 3}};
  r.evicted = {{7, 0x8000000000000000ull}};
  r.num_waiting = 4;
  r.num_running = 5;
  r.num_free_blocks = 6;
  r.num_total_blocks = 70;
  r.block_size = 16;
  const auto back = round_trip(r);
  CHECK(back.is_full);
  CHECK(back.added == r.added);
  CHECK(back.evicted == r.evicted);
  CHECK(back.num_waiting == 4);
  CHECK(back.num_running == 5);
  CHECK(back.num_free_blocks == 6);
  CHECK(back.num_total_blocks == 70);
  CHECK(back.block_size == 16);
  CHECK_FALSE(round_trip(engine_report{}).is_full);
}

TEST_CASE("wire: an engine's step summary survives serialization", "[actors][wire]") {
  step_summary s;
  s.first_step_id = 41;
  s.last_step_id = 44;
  s.num_steps = 4;
  s.start_s = 1.25;
  s.end_s = 1.5;
  s.busy_s = 0.2;
  s.token_budget = 512;
  s.num_prefill_tokens = 300;
  s.num_decode_tokens = 12;
  s.max_step_tokens = 260;
  s.max_step_seqs = 5;
  s.num_fused_steps = 2;
  s.num_draft_tokens = 9;
  s.num_accepted_tokens = 6;
  s.seqs = {{7, 256, 0, 0}, {9, 0, 3, 40, 9}};
  s.num_seqs_dropped = 1;
  s.joined = {7};
  s.finished = {{9, finish_reason::length}, {11, finish_reason::cancelled}};
  s.preempted = {13};
  s.num_joined = 1;
  s.num_finished = 2;
  s.num_preemptions = 1;
  s.kv_usage = 0.25;
  s.max_kv_usage = 0.5;
  s.num_waiting = 3;
  s.num_running = 4;
  s.engine = "10.0.0.5:9000";
  const auto back = round_trip(s);
  CHECK(back.first_step_id == 41);
  CHECK(back.last_step_id == 44);
  CHECK(back.num_steps == 4);
  CHECK(back.start_s == 1.25);
  CHECK(back.end_s == 1.5);
  CHECK(back.busy_s == 0.2);
  CHECK(back.token_budget == 512);
  CHECK(back.num_prefill_tokens == 300);
  CHECK(back.num_decode_tokens == 12);
  CHECK(back.max_step_tokens == 260);
  CHECK(back.max_step_seqs == 5);
  CHECK(back.num_fused_steps == 2);
  REQUIRE(back.seqs.size() == 2);
  CHECK(back.seqs[1].id == 9);
  CHECK(back.seqs[1].num_decode_tokens == 3);
  CHECK(back.seqs[1].position == 40);
  CHECK(back.seqs[1].num_draft_tokens == 9);
  CHECK(back.num_draft_tokens == 9);
  CHECK(back.num_accepted_tokens == 6);
  CHECK(back.seqs[0].num_prefill_tokens == 256);
  CHECK(back.num_seqs_dropped == 1);
  CHECK(back.joined == s.joined);
  REQUIRE(back.finished.size() == 2);
  CHECK(back.finished[0].reason == finish_reason::length);
  CHECK(back.finished[1].id == 11);
  CHECK(back.finished[1].reason == finish_reason::cancelled);
  CHECK(back.preempted == s.preempted);
  CHECK(back.num_joined == 1);
  CHECK(back.num_finished == 2);
  CHECK(back.num_preemptions == 1);
  CHECK(back.kv_usage == 0.25);
  CHECK(back.max_kv_usage == 0.5);
  CHECK(back.num_waiting == 3);
  CHECK(back.num_running == 4);
  CHECK(back.engine == "10.0.0.5:9000");
}
