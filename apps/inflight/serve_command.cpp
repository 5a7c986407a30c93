// `inflight serve`: the OpenAI-compatible HTTP / SSE / WebSocket server in front of the
// engine. Prints the model, the chat template and the bound address at start-up; shuts
// down gracefully on SIGINT / SIGTERM and exits 0.
//
// `--role engine`: the engine alone, served to gateways in other processes over CAF's
// middleman on server.host:server.port (actors/remote_engine.hpp); no HTTP.
// `--role router --engines host:port,...`: the HTTP gateway in front of such engines,
// each request sent to the one a routing policy picks (actors/routed_engine.hpp).
#include <signal.h>

#include <caf/all.hpp>

#include <cstdio>
#include <iostream>

#include "actors/engine.hpp"
#include "actors/remote_engine.hpp"
#include "actors/routed_engine.hpp"
#include "actors/gateway/server.hpp"
#include "apps/inflight/commands.hpp"
#include "config/deployment_loader.hpp"

namespace inflight::app {
namespace {

struct serve_options {
  std::string config_path;
  std::vector<std::string> overrides;
  std::optional<std::string> host;
  std::optional<int> port;
  std::string role = "all";
  std::vector<std::string> engines;
  std::string route_policy = "least_load";
  std::vector<std::string> route_settings;  ///< key=value, handed to the routing policy
};

deployment load_serve_deployment(const serve_options& o) {
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  if (o.host) d.server.host = *o.host;
  if (o.port) d.server.port = *o.port;
  return d;
}

/// `--role engine`: serves until SIGINT / SIGTERM, then stops taking requests, lets the
/// running ones finish (server.shutdown_grace_s) and exits 0.
void run_engine_role(const deployment& d) {
  // Blocked here, before any thread starts, so every thread inherits the mask and only
  // sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  std::printf("inflight: model %s: %s\n", model->name.c_str(), model->description.c_str());
  std::fflush(stdout);
  auto eng = engine::start(d, std::move(*model));
  if (!eng) fail(eng.error().message);
  wire_system_config cfg;  // heartbeats every second; 5 s of silence is a lost peer
  caf::actor_system net{cfg};
  auto host = engine_host::start(net, **eng, d.server.host, static_cast<std::uint16_t>(d.server.port));
  if (!host) fail(host.error().message);
  std::printf("inflight: engine: %s backend, policy %s, max_num_seqs %d\n", d.engine.backend.c_str(),
              d.scheduler.policy.c_str(), d.engine.max_num_seqs);
  std::printf("inflight: serving the engine on tcp://%s:%d (CAF middleman, no TLS: keep this port on a private "
              "network)\n",
              d.server.host.c_str(), (*host)->port());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("inflight: draining (signal %d)\n", signal_number);
  std::fflush(stdout);
  (*eng)->shutdown(d.server.shutdown_grace_s);
  host->reset();
  std::printf("inflight: shut down\n");
  std::fflush(stdout);
}

/// The HTTP gateway: prints what it serves, waits for SIGINT / SIGTERM, exits 0.
void run_gateway(engine_api& eng, const deployment& d, const std::string& engine_line) {
  gateway::server_options options;
  options.handle_signals = true;
  options.version = INFLIGHT_VERSION;
  auto srv = gateway::server::try_start(eng, options);
  if (!srv) fail(srv.error().message);
  auto& s = **srv;
  if (!s.warning().empty()) std::printf("inflight: warning: %s\n", s.warning().c_str());
  std::printf("inflight: chat template: %s\n", s.chat_template_name().c_str());
  std::printf("inflight: embeddings: %s\n", s.embeddings_summary().c_str());
  std::printf("inflight: %s\n", engine_line.c_str());
  std::printf("inflight: listening on http://%s:%d (OpenAI API under /v1, WebSocket at /v1/ws%s)\n", s.host().c_str(),
              s.port(), d.server.enable_ui ? ", web UI at /" : "");
  std::fflush(stdout);
  s.wait();
  std::printf("inflight: shut down\n");
  std::fflush(stdout);
}

/// `--role router`: the model's tokenizer and chat template (its weights are dropped
/// once loaded), the HTTP gateway, and the engines behind it.
void run_router_role(const deployment& d, const serve_options& o) {
  if (o.engines.empty()) fail("--role router needs --engines host:port,...");
  auto settings = d.model;
  settings.load_mode = "mmap";  // the weights are not used: map, do not read them
  auto model = load_model(settings, d.engine.backend);
  if (!model) fail(model.error().message);
  model->weights.reset();
  std::printf("inflight: model %s (tokenizer and chat template; the engines hold the weights)\n",
              model->name.c_str());
  std::fflush(stdout);
  wire_system_config cfg;  // heartbeats every second; 5 s of silence is a lost peer
  caf::actor_system net{cfg};
  router_options options;
  options.engines = o.engines;
  options.policy = o.route_policy;
  for (const auto& kv : o.route_settings) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) fail("--route-setting '" + kv + "': expected key=value");
    options.policy_settings.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  auto dir = try_policy_plugin_dir(d.scheduler);
  if (!dir) fail(dir.error().message);
  options.plugin_dir = dir->string();
  auto eng = routed_engine::start(d, std::move(*model), net, options);
  if (!eng) fail(eng.error().message);
  std::string engines;
  for (const auto& e : o.engines) engines += (engines.empty() ? "" : ", ") + e;
  run_gateway(**eng, d,
              "router: routing policy " + o.route_policy + ", engines " + engines + " (" +
                  std::to_string((*eng)->num_connected()) + " reachable now)");
}

void run_serve(const serve_options& o) {
  const auto d = load_serve_deployment(o);
  if (o.role == "engine") return run_engine_role(d);
  if (o.role == "router") return run_router_role(d, o);
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  std::printf("inflight: model %s: %s\n", model->name.c_str(), model->description.c_str());
  if (model->format == "dummy") {
    std::printf("inflight: NOTE: no model.path is configured: serving DUMMY random weights; "
                "the output is noise (set model.path in the config or --set model.path=...)\n");
  }
  std::fflush(stdout);
  auto eng = engine::start(d, std::move(*model));
  if (!eng) fail(eng.error().message);
  char line[512];
  std::snprintf(line, sizeof line, "engine: %s backend, policy %s, max_num_seqs %d, io threads %d\ninflight: policy plugins from %s",
                d.engine.backend.c_str(), d.scheduler.policy.c_str(), d.engine.max_num_seqs, d.server.io_threads,
                (*eng)->plugin_dir().c_str());
  run_gateway(**eng, d, line);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<serve_options>();
  auto* cmd = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP / WebSocket API");
  cmd->add_option("--config", o->config_path, "deployment TOML (default: built-in defaults)");
  cmd->add_option("--set", o->overrides, "override a config key: --set server.port=0");
  cmd->add_option("--host", o->host, "address to listen on (server.host)");
  cmd->add_option("--port", o->port, "TCP port, 0 = any free port (server.port)");
  cmd->add_option("--role", o->role,
                  "all: the HTTP API and the engine in one process; engine: the engine alone, served to gateways "
                  "in other processes on --host:--port; router: the HTTP API in front of --engines")
      ->check(CLI::IsMember({"all", "engine", "router"}))
      ->capture_default_str();
  cmd->add_option("--engines", o->engines, "router: the engines (host:port of each `serve --role engine`)")
      ->delimiter(',');
  cmd->add_option("--route-policy", o->route_policy,
                  "router: round_robin | least_load | prefix (a routing policy in the plugin directory)")
      ->capture_default_str();
  cmd->add_option("--route-setting", o->route_settings,
                  "router: a setting of the routing policy, key=value (repeatable), e.g. "
                  "--route-setting balance_abs_threshold=64");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace inflight::app
