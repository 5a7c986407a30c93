// An engine served over CAF's middleman (actors/cluster/remote_engine.hpp), in one process with
// two network actor systems and loopback TCP between them: what a remote client gets is
// what the engine gives locally, refusals and grammars cross, cancels free the blocks,
// a gateway that goes away has its requests cancelled, and an engine that goes away
// ends the streams with an error instead of leaving them hanging.
#include <catch2/catch.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/cluster/remote_engine.hpp"
#include "core/grammar/front_ends.hpp"
#include "core/grammar/token_index.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// Heartbeats every 0.2 s; 2 s of silence is a lost peer.
struct net_config : wire_system_config {
  net_config() : wire_system_config(0.2, 2.0) {}
};

/// An engine (stories260K) published by one actor system, and a second system to reach it from.
struct remote_rig {
  std::unique_ptr<engine> eng;
  net_config engine_cfg, gateway_cfg;
  std::unique_ptr<caf::actor_system> engine_net, gateway_net;
  std::unique_ptr<engine_host> host;

  bool start() {
    const auto d = stories_deployment();
    if (d.model.path.empty()) return false;
    eng = start_engine(d);
    engine_net = std::make_unique<caf::actor_system>(engine_cfg);
    gateway_net = std::make_unique<caf::actor_system>(gateway_cfg);
    auto h = engine_host::start(*engine_net, *eng, "127.0.0.1", 0);
    REQUIRE(h.has_value());
    host = std::move(*h);
    return true;
  }
  std::unique_ptr<remote_engine> connect() {
    auto r = remote_engine::connect(*gateway_net, "127.0.0.1", host->port(), 10.0);
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    return std::move(*r);
  }
  ~remote_rig() {
    if (eng) eng->shutdown(5.0);
  }
};

}  // namespace

TEST_CASE("remote engine: the same tokens and finish as the engine gives locally", "[actors][remote]") {
  remote_rig rig;
  if (!rig.start()) return;
  auto remote = rig.connect();
  auto local_sink = std::make_shared<collect_sink>();
  REQUIRE(rig.eng->submit(greedy_request(*rig.eng, "Once upon a time", 40), local_sink));
  REQUIRE(local_sink->wait());
  auto sink = std::make_shared<collect_sink>();
  auto request = greedy_request(*rig.eng, "Once upon a time", 40);
  request.params.logprobs = 2;
  auto id = remote->submit(request, sink);
  REQUIRE(id.has_value());
  REQUIRE(sink->wait());
  CHECK(sink->tokens() == local_sink->tokens());
  CHECK(sink->text() == local_sink->text());
  CHECK(sink->text().size() > 20);
  const auto f = sink->finish();
  CHECK(f.reason == finish_reason::length);
  CHECK(f.completion_tokens == 40);
  CHECK(f.prompt_tokens == static_cast<int>(request.prompt.size()));
  CHECK(f.timings.e2e_ms > 0.0);
  auto health = remote->health();
  REQUIRE(health.has_value());
  CHECK(health->is_healthy);
  CHECK(all_blocks_return(*rig.eng));
}

TEST_CASE("remote engine: refusals cross as errors, grammars as their spec", "[actors][remote]") {
  remote_rig rig;
  if (!rig.start()) return;
  auto remote = rig.connect();
  generate_request empty;
  auto refused = remote->submit(empty, std::make_shared<collect_sink>());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == errc::invalid_argument);
  CHECK_FALSE(refused.error().message.empty());

  // The gateway compiles first; a grammar the engine cannot compile is still refused there.
  // (A token_index whose spec says otherwise than its grammar does not occur: the cache
  // builds both from the same spec. Here the spec is all that crosses.)
  const auto vocab = make_grammar_vocab(*rig.eng->model().tok);
  auto choice = std::make_shared<const token_index>(
      std::make_shared<const grammar>(*grammar_from_choices(std::vector<std::string>{"x"})), vocab,
      grammar_spec{grammar_kind::json_schema, "{not json"});
  auto bad_request = greedy_request(*rig.eng, "Hi", 4);
  bad_request.params.grammar = choice;
  auto bad = remote->submit(bad_request, std::make_shared<collect_sink>());
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code == errc::invalid_argument);
  CHECK_THAT(bad.error().message, Catch::Contains("JSON"));
  // A grammar with no spec cannot cross.
  auto bare = std::make_shared<const token_index>(
      std::make_shared<const grammar>(*grammar_from_choices(std::vector<std::string>{"x"})), vocab);
  bad_request.params.grammar = bare;
  auto no_spec = remote->submit(bad_request, std::make_shared<collect_sink>());
  REQUIRE_FALSE(no_spec.has_value());
  CHECK_THAT(no_spec.error().message, Catch::Contains("grammar_spec"));

  // Sampled at temperature 1: only the grammar, compiled on the engine's side from the
  // spec, keeps every output one of the choices.
  grammar_cache cache(vocab);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    auto sink = std::make_shared<collect_sink>();
    auto r = greedy_request(*rig.eng, "Once upon a time", 30);
    r.params.temperature = 1.0f;
    r.seed = seed;
    auto index = cache.try_get(grammar_spec{grammar_kind::json_schema, R"({"enum": ["cat", "dog", 42]})"});
    REQUIRE(index.has_value());
    r.params.grammar = *index;
    auto id = remote->submit(r, sink);
    REQUIRE(id.has_value());
    REQUIRE(sink->wait());
    const auto text = sink->text();
    INFO(text);
    CHECK((text == R"("cat")" || text == R"("dog")" || text == "42"));
    CHECK(sink->finish().reason == finish_reason::stop);
  }
  CHECK(all_blocks_return(*rig.eng));
}

TEST_CASE("remote engine: a cancel crosses and frees the blocks", "[actors][remote]") {
  remote_rig rig;
  if (!rig.start()) return;
  auto remote = rig.connect();
  auto sink = std::make_shared<collect_sink>();
  auto r = greedy_request(*rig.eng, "Once upon a time", 400);
  r.params.ignore_eos = true;
  auto id = remote->submit(r, sink);
  REQUIRE(id.has_value());
  REQUIRE(wait_until([&] { return sink->num_events() > 0; }));
  remote->cancel(*id);
  REQUIRE(sink->wait());
  CHECK(sink->finish().reason == finish_reason::cancelled);
  CHECK(sink->finish().completion_tokens < 400);
  CHECK(all_blocks_return(*rig.eng));
}

// The two fault tests run one side in a child process and kill it (SIGKILL), as a
// crashed process goes. The fork happens first, while this process has no threads.

TEST_CASE("remote engine: a gateway killed mid-stream has its requests cancelled", "[actors][remote]") {
  const auto d = stories_deployment();
  if (d.model.path.empty()) return;
  int port_pipe[2], ready_pipe[2];
  REQUIRE(pipe(port_pipe) == 0);
  REQUIRE(pipe(ready_pipe) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the gateway: three long requests, then it waits to be killed
    std::uint16_t port = 0;
    if (read(port_pipe[0], &port, sizeof port) != sizeof port) _exit(1);
    net_config cfg;
    caf::actor_system net{cfg};
    auto remote = remote_engine::connect(net, "127.0.0.1", port, 10.0);
    if (!remote) _exit(2);
    std::vector<std::shared_ptr<collect_sink>> sinks;
    for (int i = 0; i < 3; ++i) {
      generate_request r;
      r.prompt = {1, 403, 407, 261, 378};
      r.params.temperature = 0.0f;
      r.params.max_tokens = 400;
      r.params.ignore_eos = true;
      sinks.push_back(std::make_shared<collect_sink>());
      if (!(*remote)->submit(r, sinks.back())) _exit(3);
    }
    if (!wait_until([&] { return sinks.back()->num_events() > 0; })) _exit(4);
    const char ok = 'r';
    if (write(ready_pipe[1], &ok, 1) != 1) _exit(5);
    for (;;) pause();
  }
  auto eng = start_engine(d);
  net_config cfg;
  caf::actor_system net{cfg};
  auto host = engine_host::start(net, *eng, "127.0.0.1", 0);
  REQUIRE(host.has_value());
  const std::uint16_t port = (*host)->port();
  REQUIRE(write(port_pipe[1], &port, sizeof port) == sizeof port);
  char ready = 0;
  const bool is_ready = read(ready_pipe[0], &ready, 1) == 1;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(is_ready);
  // Running when the gateway died: the host cancels them, the blocks come back.
  CHECK(all_blocks_return(*eng, 30.0));
  CHECK(wait_until([&] { return eng->snapshot().is_idle; }));
  host->reset();
  eng->shutdown(5.0);
}

namespace {

/// An engine in a child process streams to this one; then `fault` is done to the child
/// (SIGKILL: the process dies and its sockets close; SIGSTOP: it stops answering, the
/// connection stays open and silent, and only the heartbeats can tell).
void check_engine_fault(int fault) {
  const auto d = stories_deployment();
  if (d.model.path.empty()) return;
  int port_pipe[2];
  REQUIRE(pipe(port_pipe) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the engine: serves until it is killed
    auto model = load_model(d.model);
    if (!model) _exit(1);
    auto eng = engine::start(d, std::move(*model));
    if (!eng) _exit(2);
    net_config cfg;
    caf::actor_system net{cfg};
    auto host = engine_host::start(net, **eng, "127.0.0.1", 0);
    if (!host) _exit(3);
    const std::uint16_t port = (*host)->port();
    if (write(port_pipe[1], &port, sizeof port) != sizeof port) _exit(4);
    for (;;) pause();
  }
  std::uint16_t port = 0;
  const bool has_port = read(port_pipe[0], &port, sizeof port) == sizeof port;
  if (!has_port) kill(child, SIGKILL);
  REQUIRE(has_port);
  net_config cfg;
  caf::actor_system net{cfg};
  auto remote = remote_engine::connect(net, "127.0.0.1", port, 10.0);
  REQUIRE(remote.has_value());
  auto sink = std::make_shared<collect_sink>();
  generate_request r;
  r.prompt = {1, 403, 407, 261, 378};
  r.params.temperature = 0.0f;
  r.params.max_tokens = 400;
  r.params.ignore_eos = true;
  REQUIRE((*remote)->submit(r, sink).has_value());
  const bool is_streaming = wait_until([&] { return sink->num_events() > 0; });
  kill(child, fault);
  struct reaper {
    pid_t pid;
    ~reaper() {
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  } reap{child};
  REQUIRE(is_streaming);
  // Never a hang: the stream ends with an error that says which engine went away.
  REQUIRE(sink->wait(10.0));
  const auto f = sink->finish();
  CHECK(f.reason == finish_reason::error);
  REQUIRE(f.cause.has_value());
  CHECK(f.cause->code == errc::unavailable);
  CHECK_THAT(f.cause->message, Catch::Contains("127.0.0.1:" + std::to_string(port)));
  CHECK(wait_until([&] { return !(*remote)->is_connected(); }, 10.0));
  auto late = (*remote)->submit(r, std::make_shared<collect_sink>());
  REQUIRE_FALSE(late.has_value());
  CHECK(late.error().code == errc::unavailable);
  auto health = (*remote)->health();
  CHECK_FALSE(health.has_value());
}

}  // namespace

TEST_CASE("remote engine: an engine killed mid-stream ends its streams with an error", "[actors][remote]") {
  check_engine_fault(SIGKILL);
}

TEST_CASE("remote engine: an engine cut off mid-stream is found out by the heartbeats", "[actors][remote]") {
  check_engine_fault(SIGSTOP);  // heartbeats every 0.2 s, connection timeout 2 s (net_config)
}

TEST_CASE("remote engine: inflight serve --role engine serves, drains on SIGTERM and exits 0", "[actors][remote]") {
  const auto d = stories_deployment();
  if (d.model.path.empty()) return;
  const std::string bin = std::string(INFLIGHT_BINARY_DIR) + "/bin/inflight";
  REQUIRE(access(bin.c_str(), X_OK) == 0);
  int out[2];
  REQUIRE(pipe(out) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    const std::string model = "model.path=" + d.model.path, tok = "model.tokenizer=" + d.model.tokenizer,
                      plugins = "scheduler.plugin_dir=" + d.scheduler.plugin_dir;
    const std::string config = std::string(INFLIGHT_SOURCE_DIR) + "/config/cpu-small.toml";
    execl(bin.c_str(), bin.c_str(), "serve", "--role", "engine", "--config", config.c_str(), "--port", "0", "--set",
          model.c_str(), "--set", tok.c_str(), "--set", plugins.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* log = fdopen(out[0], "r");
  std::string printed;
  int port = 0;
  char line[512];
  while (port == 0 && std::fgets(line, sizeof line, log)) {
    printed += line;
    std::sscanf(line, "inflight: serving the engine on tcp://127.0.0.1:%d", &port);
  }
  INFO(printed);
  if (port == 0) kill(child, SIGKILL);
  REQUIRE(port > 0);
  net_config cfg;
  caf::actor_system net{cfg};
  auto remote = remote_engine::connect(net, "127.0.0.1", static_cast<std::uint16_t>(port), 10.0);
  REQUIRE(remote.has_value());
  generate_request r;
  r.prompt = {1, 403, 407, 261, 378};
  r.params.temperature = 0.0f;
  r.params.max_tokens = 300;
  r.params.ignore_eos = true;
  auto sink = std::make_shared<collect_sink>();
  REQUIRE((*remote)->submit(r, sink).has_value());
  REQUIRE(wait_until([&] { return sink->num_events() > 0; }));
  // Draining: the running request still completes; the process then exits 0.
  kill(child, SIGTERM);
  REQUIRE(sink->wait(30.0));
  CHECK(sink->finish().reason == finish_reason::length);
  CHECK(sink->finish().completion_tokens == 300);
  while (std::fgets(line, sizeof line, log)) printed += line;
  std::fclose(log);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(printed, Catch::Contains("inflight: draining") && Catch::Contains("inflight: shut down"));
}
