// `inflight serve`: the OpenAI-compatible HTTP / SSE / WebSocket server in front of the
// engine. Prints the model, the chat template and the bound address at start-up; shuts
// down gracefully on SIGINT / SIGTERM and exits 0.
//
// `--role engine`: the engine alone, served to gateways in other processes over CAF's
// middleman on cluster.bind (else server.host:server.port) (actors/cluster/remote_engine.hpp),
// with mutual TLS when [cluster] tls = true (actors/cluster/cluster_tls.hpp); no HTTP.
// `--role router --engines host:port,...` (or [router] engines): the HTTP gateway in
// front of such engines, each request sent to the one a routing policy picks
// (actors/cluster/routed_engine.hpp). docs/deployment.md has the whole picture.
#include <signal.h>

#include <caf/all.hpp>

#include <cstdio>
#include <iostream>

#include "actors/cluster/cluster_tls.hpp"
#include "actors/engine/engine.hpp"
#include "actors/cluster/remote_engine.hpp"
#include "actors/cluster/routed_engine.hpp"
#include "actors/gateway/server.hpp"
#include "actors/models/model_pool.hpp"
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
  std::optional<std::string> route_policy;
  std::vector<std::string> route_settings;  ///< key=value, handed to the routing policy
  std::vector<std::string> api_keys;
  std::optional<std::string> ssl_certfile, ssl_keyfile;
  std::vector<std::string> models;  ///< NAME=SPEC: one [[models]] entry each
  std::vector<std::string> loras;   ///< NAME=PATH: one lora.adapters entry each
};

/// `--model NAME=SPEC` as a [[models]] entry (SPEC: a path or an hf: name).
model_entry model_entry_of(const std::string& flag) {
  const auto eq = flag.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size())
    fail("--model takes NAME=SPEC (a served name, then a path or an hf:ORG/REPO name), not '" + flag + "'");
  model_entry e;
  e.name = flag.substr(0, eq);
  e.model.name = e.name;
  e.model.path = flag.substr(eq + 1);
  return e;
}

/// The deployment file, then the flags over it.
deployment load_serve_deployment(const serve_options& o) {
  deployment d = load_deployment_or_fail(o.config_path, o.overrides);
  if (o.host) d.server.host = *o.host;
  if (o.port) d.server.port = *o.port;
  for (const auto& k : o.api_keys) d.server.api_keys.push_back(k);
  if (o.ssl_certfile) d.server.tls_cert_file = *o.ssl_certfile;
  if (o.ssl_keyfile) d.server.tls_key_file = *o.ssl_keyfile;
  if (!o.engines.empty()) d.router.engines = o.engines;
  if (o.route_policy) d.router.policy = *o.route_policy;
  for (const auto& m : o.models) d.models.push_back(model_entry_of(m));
  for (const auto& flag : o.loras) {
    const auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size())
      fail("--lora takes NAME=PATH (a served name, then a PEFT adapter folder), not '" + flag + "'");
    d.lora.adapters.emplace_back(flag.substr(0, eq), flag.substr(eq + 1));
  }
  if (!o.models.empty()) fetch_hub_models_or_fail(d);
  if (auto ok = config::validate_deployment(d); !ok) fail(ok.error().message);
  return d;
}

/// Where `--role engine` listens: cluster.bind, else server.host:server.port; --host and
/// --port over either.
std::pair<std::string, int> engine_bind(const deployment& d, const serve_options& o) {
  std::string host = d.server.host;
  int port = d.server.port;
  if (const auto& bind = d.cluster.bind; !bind.empty()) {
    const auto colon = bind.rfind(':');
    host = bind.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    port = std::stoi(bind.substr(colon + 1));  // checked by the loader
  }
  if (o.host) host = *o.host;
  if (o.port) port = *o.port;
  return {host, port};
}

/// The network side's actor system config: heartbeats, and mutual TLS with [cluster] tls.
std::unique_ptr<wire_system_config> make_wire_config(const deployment& d) {
  auto cfg = std::make_unique<wire_system_config>(d.cluster.heartbeat_interval_s, d.cluster.connection_timeout_s);
  if (auto ok = configure_cluster_tls(*cfg, d.cluster); !ok) fail(ok.error().message);
  return cfg;
}

/// `--role engine`: serves until SIGINT / SIGTERM, then stops taking requests, lets the
/// running ones finish (server.shutdown_grace_s) and exits 0.
void run_engine_role(const deployment& d, const serve_options& o) {
  // Blocked here, before any thread starts, so every thread inherits the mask and only
  // sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // [[models]]: every model, each its own engine, all loaded for as long as the process
  // runs (routers choose among processes; loading on demand is `--role all`'s).
  std::vector<model_entry> entries = d.models;
  if (entries.empty()) entries.push_back({d.model.name, {}, d.model, std::nullopt, std::nullopt});
  std::vector<std::unique_ptr<engine>> engines;
  std::vector<engine_host::named_engine> named;
  for (const auto& e : entries) {
    const deployment one = d.models.empty() ? d : deployment_of(d, e);
    auto model = load_model(one.model, one.engine.backend);
    if (!model) fail((d.models.empty() ? "" : "model " + e.name + ": ") + model.error().message);
    std::printf("inflight: model %s: %s\n", model->name.c_str(), model->description.c_str());
    std::fflush(stdout);
    auto eng = engine::start(one, std::move(*model));
    if (!eng) fail(eng.error().message);
    std::vector<std::string> names{(*eng)->model().name};
    names.insert(names.end(), e.aliases.begin(), e.aliases.end());
    named.push_back({eng->get(), std::move(names)});
    engines.push_back(std::move(*eng));
  }
  const auto [bind_host, bind_port] = engine_bind(d, o);
  auto cfg = make_wire_config(d);  // a bad certificate fails before the port opens
  caf::actor_system net{*cfg};
  auto host = engine_host::start(net, named, bind_host, static_cast<std::uint16_t>(bind_port));
  if (!host) fail(host.error().message);
  std::printf("inflight: engine: %s backend, policy %s, max_num_seqs %d\n", d.engine.backend.c_str(),
              d.scheduler.policy.c_str(), d.engine.max_num_seqs);
  if (d.cluster.tls) {
    std::printf("inflight: serving the engine on tcp://%s:%d (CAF middleman, mutual TLS: routers need a "
                "certificate from %s)\n",
                bind_host.c_str(), (*host)->port(), d.cluster.ca_file.c_str());
  } else {
    std::printf("inflight: serving the engine on tcp://%s:%d (CAF middleman, no TLS: keep this port on a private "
                "network)\n",
                bind_host.c_str(), (*host)->port());
  }
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("inflight: draining (signal %d)\n", signal_number);
  std::fflush(stdout);
  (*host)->drain();  // routers stop sending here at once
  for (auto& eng : engines) eng->shutdown(d.server.shutdown_grace_s);
  host->reset();
  std::printf("inflight: shut down\n");
  std::fflush(stdout);
}

/// The HTTP gateway: prints what it serves, waits for SIGINT / SIGTERM, exits 0.
void run_gateway(std::vector<gateway::model_route> models, const deployment& d, const std::string& engine_line,
                 model_control* control = nullptr) {
  gateway::server_options options;
  options.handle_signals = true;
  options.control = control;
  options.version = INFLIGHT_VERSION;
  auto srv = gateway::server::try_start(std::move(models), options);
  if (!srv) fail(srv.error().message);
  auto& s = **srv;
  if (!s.warning().empty()) std::printf("inflight: warning: %s\n", s.warning().c_str());
  std::printf("inflight: chat template: %s\n", s.chat_template_name().c_str());
  std::printf("inflight: embeddings: %s\n", s.embeddings_summary().c_str());
  std::printf("inflight: %s\n", engine_line.c_str());
  if (s.num_api_keys() > 0) {
    std::printf("inflight: API keys: %zu (Authorization: Bearer <key>; /health%s open)\n", s.num_api_keys(),
                d.server.metrics_open ? " and /metrics" : "");
  }
  std::printf("inflight: listening on %s://%s:%d (OpenAI API under /v1, WebSocket at /v1/ws%s)\n",
              s.is_tls() ? "https" : "http", s.host().c_str(), s.port(), d.server.enable_ui ? ", web UI at /" : "");
  std::fflush(stdout);
  s.wait();
  std::printf("inflight: shut down\n");
  std::fflush(stdout);
}

/// `--role router`: each model's tokenizer and chat template (its weights are dropped
/// once loaded), the HTTP gateway, and the engines behind it. [[models]]: a routed engine
/// per model, each sending to the engines whose process serves that model.
void run_router_role(const deployment& d, const serve_options& o) {
  if (d.router.engines.empty()) fail("--role router needs --engines host:port,... (or [router] engines)");
  auto cfg = make_wire_config(d);
  std::vector<model_entry> entries = d.models;
  if (entries.empty()) entries.push_back({d.model.name, {}, d.model, std::nullopt, std::nullopt});
  caf::actor_system net{*cfg};
  std::vector<std::unique_ptr<routed_engine>> routed;
  std::vector<gateway::model_route> routes;
  for (const auto& e : entries) {
    const deployment one = d.models.empty() ? d : deployment_of(d, e);
    auto settings = one.model;
    settings.load_mode = "mmap";  // the weights are not used: map, do not read them
    auto model = load_model(settings, one.engine.backend);
    if (!model) fail((d.models.empty() ? "" : "model " + e.name + ": ") + model.error().message);
    model->weights.reset();
    std::printf("inflight: model %s (tokenizer and chat template; the engines hold the weights)\n",
                model->name.c_str());
    std::fflush(stdout);
    router_options options;
    options.engines = d.router.engines;
    options.policy = d.router.policy;
    options.timeout_s = d.router.request_timeout_s;
    options.reconnect_interval_s = d.router.reconnect_interval_s;
    options.policy_settings = parse_route_settings(o.route_settings);
    if (!d.models.empty()) options.model = e.name;
    auto dir = try_policy_plugin_dir(one.scheduler);
    if (!dir) fail(dir.error().message);
    options.plugin_dir = dir->string();
    auto eng = routed_engine::start(one, std::move(*model), net, options);
    if (!eng) fail(eng.error().message);
    routes.push_back({eng->get(), e.aliases});
    routed.push_back(std::move(*eng));
  }
  std::string engines;
  for (const auto& e : d.router.engines) engines += (engines.empty() ? "" : ", ") + e;
  std::string reach;
  for (std::size_t i = 0; i < routed.size(); ++i) {
    reach += (reach.empty() ? "" : ", ") + std::to_string(routed[i]->num_connected()) +
             (d.models.empty() ? "" : " for " + entries[i].name);
  }
  run_gateway(routes, d,
              "router: routing policy " + d.router.policy + ", engines " + engines + " (" + reach + " reachable now" +
                  (d.cluster.tls ? ", mutual TLS" : "") + ")");
}

/// Several models: a pool loads them, at start while server.max_loaded_models and
/// server.memory_budget leave room (in the order given), the others on first use.
void run_models(const deployment& d) {
  model_pool pool({d.server.max_loaded_models, d.server.memory_budget_bytes});
  std::vector<gateway::model_route> routes;
  std::string line;
  for (const auto& e : d.models) {
    const deployment one = deployment_of(d, e);
    auto slot = pool.add(one, e.keep_alive_s.value_or(d.server.keep_alive_s));
    if (!slot) fail("model " + e.name + ": " + slot.error().message);
    const auto st = (*slot)->status();
    std::printf("inflight: model %s: %s%s; %s (%.1f MiB)\n", e.name.c_str(), (*slot)->model().description.c_str(),
                (*slot)->model().format == "dummy" ? " (DUMMY random weights: the output is noise)" : "",
                st.state == model_state::loaded ? "loaded" : "loads on first use", double(st.size_bytes) / 1048576.0);
    std::fflush(stdout);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s%s: %s backend, policy %s, max_num_seqs %d", line.empty() ? "" : "; ",
                  e.name.c_str(), one.engine.backend.c_str(), one.scheduler.policy.c_str(), one.engine.max_num_seqs);
    line += buf;
    routes.push_back({*slot, e.aliases});
  }
  pool.start();
  run_gateway(routes, d, "engines: " + line + " (io threads " + std::to_string(d.server.io_threads) + ")", &pool);
}

void run_serve(const serve_options& o) {
  const auto d = load_serve_deployment(o);
  if (o.role == "engine") return run_engine_role(d, o);
  if (o.role == "router") return run_router_role(d, o);
  if (!d.models.empty()) return run_models(d);
  auto model = load_model(d.model, d.engine.backend);
  if (!model) fail(model.error().message);
  std::printf("inflight: model %s: %s\n", model->name.c_str(), model->description.c_str());
  if (model->format == "dummy") {
    std::printf("inflight: NOTE: serving DUMMY random weights (no model.path is configured, or model.fallback "
                "stands in for one that could not be fetched); the output is noise (set model.path in the config or "
                "--set model.path=..., a file or an hf:ORG/REPO name)\n");
  }
  std::fflush(stdout);
  auto eng = engine::start(d, std::move(*model));
  if (!eng) fail(eng.error().message);
  char line[512];
  std::snprintf(line, sizeof line, "engine: %s backend, policy %s, max_num_seqs %d, io threads %d\ninflight: policy plugins from %s",
                d.engine.backend.c_str(), d.scheduler.policy.c_str(), d.engine.max_num_seqs, d.server.io_threads,
                (*eng)->plugin_dir().c_str());
  run_gateway({{eng->get(), {}}}, d, line);
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
                  "router: round_robin | least_load | prefix (a routing policy in the plugin directory; "
                  "router.policy, default least_load)");
  cmd->add_option("--route-setting", o->route_settings,
                  "router: a setting of the routing policy, key=value (repeatable), e.g. "
                  "--route-setting balance_abs_threshold=64");
  cmd->add_option("--api-key", o->api_keys,
                  "a key clients must send as `Authorization: Bearer <key>` (repeatable; adds to server.api_keys)");
  cmd->add_option("--ssl-certfile", o->ssl_certfile, "PEM certificate: serve HTTPS / WSS (server.tls_cert_file)");
  cmd->add_option("--ssl-keyfile", o->ssl_keyfile, "PEM private key of --ssl-certfile (server.tls_key_file)");
  cmd->add_option("--model", o->models,
                  "serve several models: NAME=SPEC (a path or an hf:ORG/REPO name), repeatable; a request's `model` "
                  "field chooses one ([[models]] in TOML)");
  cmd->add_option("--lora", o->loras,
                  "a LoRA adapter over the model: NAME=PATH (a PEFT adapter folder), repeatable; a request's `model` "
                  "field names it ([lora] adapters in TOML)");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace inflight::app
