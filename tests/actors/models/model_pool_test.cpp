// The models of a server loaded on demand (actors/models/): real engines of two dummy
// models with different weights, so that an answer shows which model gave it.
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>

#include "actors/models/model_pool.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

deployment named_dummy(const std::string& name, std::uint64_t seed) {
  deployment d = dummy_deployment();
  d.model.name = name;
  d.model.dummy.seed = seed;
  return d;
}

/// Sampled with a fixed seed: the same tokens from the same model each time, and other
/// tokens from other weights (a tiny random model's greedy text is one byte repeated).
generate_request seeded(const engine_api& eng, int max_tokens) {
  generate_request r;
  r.prompt = eng.model().tok->encode("Once upon a time", true);
  r.params.temperature = 1.0f;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  r.seed = 7;
  return r;
}

/// What the model of `d` answers alone, without a pool.
std::vector<token_id> alone(const deployment& d, int max_tokens) {
  auto eng = start_engine(d);
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(seeded(*eng, max_tokens), sink));
  REQUIRE(sink->wait());
  return sink->tokens();
}

std::vector<token_id> ask(engine_api& slot, int max_tokens, finish_reason expect = finish_reason::length) {
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(slot.submit(seeded(slot, max_tokens), sink));
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == expect);
  return sink->tokens();
}

/// Holds its request's first token until released: the request stays in flight.
class held_sink final : public request_sink {
 public:
  void on_token(const token_event& e) override {
    if (!is_first_.exchange(false)) return inner->on_token(e);
    started.count_down();
    release.wait();
    inner->on_token(e);
  }
  void on_finish(const finish_event& e) override { inner->on_finish(e); }
  std::shared_ptr<collect_sink> inner = std::make_shared<collect_sink>();
  std::latch started{1}, release{1};

 private:
  std::atomic<bool> is_first_{true};
};

}  // namespace

TEST_CASE("model pool: over max_loaded_models a request loads its model, unloading the idle one, and each answers "
          "as it does alone", "[models]") {
  const auto da = named_dummy("a", 1), db = named_dummy("b", 2);
  const auto want_a = alone(da, 12), want_b = alone(db, 12);
  REQUIRE(want_a != want_b);  // else the test could not tell the models apart

  model_pool pool({.max_loaded_models = 1});
  auto a = pool.add(da, -1.0);
  auto b = pool.add(db, -1.0);
  REQUIRE(a);
  REQUIRE(b);
  CHECK((*a)->state() == model_state::loaded);
  CHECK((*b)->state() == model_state::unloaded);  // only read: the limit holds one
  CHECK((*b)->status().size_bytes > 0);           // its estimate
  pool.start();

  CHECK(ask(**b, 12) == want_b);
  CHECK((*b)->state() == model_state::loaded);
  CHECK((*a)->state() == model_state::unloaded);
  CHECK(ask(**a, 12) == want_a);
  CHECK((*a)->state() == model_state::loaded);
  CHECK((*b)->state() == model_state::unloaded);
  CHECK(ask(**b, 12) == want_b);  // loaded again
  // The counters outlive the unloads: b finished two requests over two loads.
  CHECK((*b)->metrics().num_finished("length") == 2);
  CHECK((*a)->metrics().num_finished("length") == 1);
}

TEST_CASE("model pool: a model with a request in flight is never unloaded, and the other model's request waits for it",
          "[models]") {
  model_pool pool({.max_loaded_models = 1});
  auto a = pool.add(named_dummy("a", 1), -1.0);
  auto b = pool.add(named_dummy("b", 2), -1.0);
  REQUIRE(a);
  REQUIRE(b);
  pool.start();

  auto held = std::make_shared<held_sink>();
  REQUIRE((*a)->submit(seeded(**a, 20), held));
  held->started.wait();  // a's request runs, and stays
  auto waiting = std::make_shared<collect_sink>();
  REQUIRE((*b)->submit(seeded(**b, 5), waiting));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // several loader rounds
  CHECK(waiting->num_finishes() == 0);
  CHECK((*a)->state() == model_state::loaded);
  CHECK((*b)->status().num_requests == 1);
  CHECK((*b)->state() != model_state::loaded);

  held->release.count_down();
  REQUIRE(held->inner->wait());
  CHECK(held->inner->finish().reason == finish_reason::length);
  CHECK(held->inner->tokens().size() == 20);  // not cut by b's load
  REQUIRE(waiting->wait());
  CHECK(waiting->finish().reason == finish_reason::length);
  CHECK((*b)->state() == model_state::loaded);
  CHECK((*a)->state() == model_state::unloaded);
}

TEST_CASE("model pool: a load that fails finishes its requests with the cause, the other model serves, and a later "
          "load succeeds", "[models]") {
  const auto dir = std::filesystem::temp_directory_path() / ("inflight-pool-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto config = dir / "config.json";
  const std::string config_text = R"({"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 256,
    "architectures": ["LlamaForCausalLM"], "rms_norm_eps": 1e-5})";
  std::ofstream(config) << config_text;
  auto db = named_dummy("b", 2);
  db.model.config_json = config.string();

  model_pool pool({.max_loaded_models = 1});
  auto a = pool.add(named_dummy("a", 1), -1.0);
  auto b = pool.add(db, -1.0);
  REQUIRE(a);
  REQUIRE(b);
  pool.start();
  std::filesystem::remove(config);  // b cannot be read again

  auto sink = std::make_shared<collect_sink>();
  REQUIRE((*b)->submit(seeded(**b, 5), sink));
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == finish_reason::error);
  REQUIRE(sink->finish().cause);
  CHECK(sink->finish().cause->code == errc::unavailable);
  CHECK_THAT(sink->finish().cause->message, Catch::Contains("model `b` could not be loaded") &&
                                                Catch::Contains("config.json"));
  CHECK((*b)->state() == model_state::failed);
  CHECK_THAT((*b)->status().error, Catch::Contains("config.json"));

  CHECK(ask(**a, 8).size() == 8);  // the other model serves on (loaded again: b's load unloaded it)

  std::ofstream(config) << config_text;
  CHECK(ask(**b, 6).size() == 6);
  CHECK((*b)->state() == model_state::loaded);
  std::filesystem::remove_all(dir);
}

TEST_CASE("model pool: keep_alive 0 unloads a model once idle, a negative one keeps it, load and unload on demand",
          "[models]") {
  model_pool pool({});
  auto a = pool.add(named_dummy("a", 1), 0.0);
  auto b = pool.add(named_dummy("b", 2), -1.0);
  REQUIRE(a);
  REQUIRE(b);
  pool.start();
  CHECK(ask(**a, 4).size() == 4);
  CHECK(ask(**b, 4).size() == 4);
  CHECK(wait_until([&] { return (*a)->state() == model_state::unloaded; }, 10.0));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK((*b)->state() == model_state::loaded);

  // A request's keep_alive becomes the model's.
  pool.set_keep_alive("b", 0.0);
  CHECK(wait_until([&] { return (*b)->state() == model_state::unloaded; }, 10.0));

  pool.set_keep_alive("a", -1.0);
  std::promise<result<void>> loaded;
  pool.load("a", [&](result<void> r) { loaded.set_value(r); });
  CHECK(loaded.get_future().get().has_value());
  CHECK((*a)->state() == model_state::loaded);
  std::promise<result<void>> unloaded;
  pool.unload("a", [&](result<void> r) { unloaded.set_value(r); });
  CHECK(unloaded.get_future().get().has_value());
  CHECK((*a)->state() == model_state::unloaded);
  std::promise<result<void>> unknown;
  pool.load("c", [&](result<void> r) { unknown.set_value(r); });
  CHECK(unknown.get_future().get().error().code == errc::not_found);
}

TEST_CASE("model pool: a model larger than server.memory_budget is refused, naming the budget", "[models]") {
  model_pool pool({.memory_budget_bytes = 1024});
  auto a = pool.add(named_dummy("a", 1), -1.0);
  REQUIRE(a);
  CHECK((*a)->state() == model_state::unloaded);  // over the budget: not loaded at start
  pool.start();
  auto sink = std::make_shared<collect_sink>();
  REQUIRE((*a)->submit(seeded(**a, 4), sink));
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == finish_reason::error);
  REQUIRE(sink->finish().cause);
  CHECK_THAT(sink->finish().cause->message, Catch::Contains("server.memory_budget"));
}

TEST_CASE("model pool: a request waiting for a load can be cancelled, and the model then stays unloaded",
          "[models]") {
  model_pool pool({.max_loaded_models = 1});
  auto a = pool.add(named_dummy("a", 1), -1.0);
  auto b = pool.add(named_dummy("b", 2), -1.0);
  REQUIRE(a);
  REQUIRE(b);
  pool.start();
  auto held = std::make_shared<held_sink>();
  REQUIRE((*a)->submit(seeded(**a, 6), held));
  held->started.wait();
  auto waiting = std::make_shared<collect_sink>();
  auto id = (*b)->submit(seeded(**b, 5), waiting);
  REQUIRE(id);
  (*b)->cancel(*id);
  REQUIRE(waiting->wait(10.0));
  CHECK(waiting->finish().reason == finish_reason::cancelled);
  CHECK((*b)->status().num_requests == 0);
  held->release.count_down();
  REQUIRE(held->inner->wait());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK((*a)->state() == model_state::loaded);  // nobody wants b: a was not unloaded for it
  CHECK((*b)->state() == model_state::unloaded);
}
