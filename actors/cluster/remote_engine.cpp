#include "actors/cluster/remote_engine.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <chrono>
#include <map>
#include <set>
#include <unordered_map>

#include "actors/cache_feed.hpp"
#include "actors/engine/messages.hpp"
#include "actors/step_feed.hpp"
#include "core/grammar/token_index.hpp"
#include "core/grammar/tokenizer_vocab.hpp"

namespace inflight {
namespace {

using forget_atom = caf::atom_constant<caf::atom("forget")>;

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

// ---------------------------------------------------------------- engine side

/// Streams one request's events to the gateway actor that sent it; called on engine
/// threads (anon_send is thread-safe). On finish it also tells the host to forget it.
/// Once the host has closed, it sends nothing: the gateway learns from the host's end
/// that the engine went away, not from the cancels the closing host makes.
class forwarding_sink final : public request_sink {
 public:
  forwarding_sink(caf::actor client, caf::actor host, std::uint64_t tag, std::shared_ptr<std::atomic<bool>> is_closed)
      : client_(std::move(client)), host_(std::move(host)), tag_(tag), is_closed_(std::move(is_closed)) {}
  void on_token(const token_event& ev) override {
    if (!is_closed_->load()) caf::anon_send(client_, token_atom::value, tag_, ev);
  }
  void on_finish(const finish_event& ev) override {
    if (is_closed_->load()) return;
    caf::anon_send(client_, finished_atom::value, tag_, ev);
    caf::anon_send(host_, forget_atom::value, client_.address(), tag_);
  }

 private:
  caf::actor client_;
  caf::actor host_;
  std::uint64_t tag_;
  std::shared_ptr<std::atomic<bool>> is_closed_;
};

/// Hands the engine's cache and load reports to the host actor, in order (called on
/// the engine's scheduler thread).
class report_sink final : public cache_sink {
 public:
  explicit report_sink(caf::actor host) : host_(std::move(host)) {}
  void on_report(const engine_report& report) override { caf::anon_send(host_, engine_report_atom::value, report); }

 private:
  caf::actor host_;
};

/// Hands the engine's step summaries to the host actor, in order (called on the engine's
/// scheduler thread, only while a router watches them).
class step_forward_sink final : public step_sink {
 public:
  explicit step_forward_sink(caf::actor host) : host_(std::move(host)) {}
  void on_step(const step_summary& step) override { caf::anon_send(host_, step_summary_atom::value, step); }

 private:
  caf::actor host_;
};

/// Which host actor serves which name, in an engine process of several models (filled
/// before the port is published, read only after).
using host_directory = std::vector<std::pair<std::string, caf::actor>>;

struct host_state {
  engine* eng = nullptr;
  std::shared_ptr<const host_directory> directory;
  std::shared_ptr<grammar_cache> grammars;
  std::set<caf::actor> subscribers;  ///< routers that get the engine's reports
  std::set<caf::actor> step_subscribers;  ///< routers that get the engine's step summaries
  bool is_draining = false;               ///< the engine takes no new requests (engine_host::drain)
  std::shared_ptr<std::atomic<bool>> is_closed = std::make_shared<std::atomic<bool>>(false);
  /// Requests running for each gateway actor: tag -> engine id.
  std::map<caf::actor_addr, std::map<std::uint64_t, request_id>> running;

  void cancel_all(const caf::actor_addr& client) {
    auto it = running.find(client);
    if (it == running.end()) return;
    for (const auto& [tag, id] : it->second) eng->cancel(id);
    running.erase(it);
  }
};

wire_submit_reply refused(error e) { return {0, std::move(e)}; }

caf::behavior host_actor(caf::stateful_actor<host_state>* self, engine* eng, std::shared_ptr<grammar_cache> grammars,
                         std::shared_ptr<const host_directory> directory) {
  self->state.eng = eng;
  self->state.directory = std::move(directory);
  self->state.grammars = std::move(grammars);
  // The engine summarises its steps only while some router watches them.
  const auto update_step_sink = [self] {
    auto& st = self->state;
    if (st.step_subscribers.empty()) st.eng->set_step_sink(nullptr);
    else if (!st.eng->has_step_sink())
      st.eng->set_step_sink(std::make_shared<step_forward_sink>(caf::actor_cast<caf::actor>(self)));
  };
  self->set_down_handler([self, update_step_sink](caf::down_msg& dm) {
    self->state.cancel_all(dm.source);
    self->state.subscribers.erase(caf::actor_cast<caf::actor>(dm.source));
    if (self->state.step_subscribers.erase(caf::actor_cast<caf::actor>(dm.source)) > 0) update_step_sink();
  });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    self->state.is_closed->store(true);
    if (!self->state.step_subscribers.empty()) self->state.eng->set_step_sink(nullptr);
    while (!self->state.running.empty()) self->state.cancel_all(self->state.running.begin()->first);
    self->quit(msg.reason);
  });
  return {
      [self](remote_submit_atom, wire_request& w, std::uint64_t tag) -> wire_submit_reply {
        auto client = caf::actor_cast<caf::actor>(self->current_sender());
        if (!client) return refused({errc::invalid_argument, "a request without a sender to stream to"});
        if (w.grammar) {
          auto index = self->state.grammars->try_get(*w.grammar);
          if (!index) return refused(index.error());
          (*index)->warm_up();  // here, not on the step loop
          w.request.params.grammar = *index;
        }
        auto sink = std::make_shared<forwarding_sink>(client, caf::actor_cast<caf::actor>(self), tag,
                                                      self->state.is_closed);
        auto id = self->state.eng->submit(std::move(w.request), std::move(sink));
        if (!id) return refused(id.error());
        auto& mine = self->state.running[client.address()];
        if (mine.empty() && !self->state.subscribers.contains(client)) self->monitor(client);
        mine[tag] = *id;
        return {*id, std::nullopt};
      },
      [self](cancel_atom, request_id id) {
        const auto it = self->state.running.find(caf::actor_cast<caf::actor_addr>(self->current_sender()));
        if (it == self->state.running.end()) return;  // only a request's own gateway cancels it
        for (const auto& [tag, running_id] : it->second) {
          if (running_id == id) self->state.eng->cancel(id);
        }
      },
      [self](model_host_atom, const std::string& name) -> caf::result<caf::actor> {
        if (!self->state.directory) {  // one model: its own names
          const auto& m = self->state.eng->model();
          if (name == m.name) return caf::actor_cast<caf::actor>(self);
          return caf::make_error(caf::sec::invalid_argument, "no model " + name + " here (this engine serves " +
                                                                 m.name + ")");
        }
        for (const auto& [served, host] : *self->state.directory)
          if (served == name) return host;
        return caf::make_error(caf::sec::invalid_argument, "no model " + name + " here");
      },
      [self](health_atom) { return self->state.eng->health(); },
      [self](metrics_atom) { return self->state.eng->render_metrics(); },
      [self](subscribe_atom) {
        auto router = caf::actor_cast<caf::actor>(self->current_sender());
        if (!router) return;
        // A client with requests running is monitored already; one monitor is enough.
        if (!self->state.running.contains(router.address())) self->monitor(router);
        self->state.subscribers.insert(router);
        self->state.eng->request_full_report();  // to every subscriber: the others take it too
        if (self->state.is_draining) self->send(router, draining_atom::value);
      },
      [self](draining_atom) {
        if (self->current_sender() != nullptr) return;  // only engine_host::drain (no actor) says so
        self->state.is_draining = true;
        for (const auto& router : self->state.subscribers) self->send(router, draining_atom::value);
      },
      [self](engine_report_atom, const engine_report& report) {
        if (self->current_sender() != nullptr) return;  // only the engine's own sink (no actor) reports
        for (const auto& router : self->state.subscribers) self->send(router, engine_report_atom::value, report);
      },
      [self, update_step_sink](step_subscribe_atom, bool is_on) {
        auto router = caf::actor_cast<caf::actor>(self->current_sender());
        if (!router) return;
        auto& st = self->state;
        const bool is_monitored = st.running.contains(router.address()) || st.subscribers.contains(router) ||
                                  st.step_subscribers.contains(router);
        if (is_on) {
          if (!is_monitored) self->monitor(router);
          st.step_subscribers.insert(router);
        } else {
          st.step_subscribers.erase(router);
        }
        update_step_sink();
      },
      [self](step_summary_atom, const step_summary& step) {
        if (self->current_sender() != nullptr) return;  // only the engine's own sink (no actor) sends steps
        for (const auto& router : self->state.step_subscribers) self->send(router, step_summary_atom::value, step);
      },
      [self](forget_atom, const caf::actor_addr& client, std::uint64_t tag) {
        auto it = self->state.running.find(client);
        if (it == self->state.running.end()) return;
        it->second.erase(tag);
        if (it->second.empty()) {
          if (!self->state.subscribers.contains(caf::actor_cast<caf::actor>(client))) self->demonitor(client);
          self->state.running.erase(it);
        }
      },
  };
}

// ---------------------------------------------------------------- gateway side

struct client_entry {
  std::shared_ptr<request_sink> sink;
  std::optional<request_id> engine_id;  ///< once the host answered
  bool is_cancel_pending = false;
};

struct client_state {
  caf::actor host;
  remote_engine::report_handler on_report;
  remote_engine::drain_handler on_drain;
  std::shared_ptr<std::atomic<bool>> is_draining;
  std::shared_ptr<remote_engine::step_handler_slot> on_step;
  std::string address;
  caf::timespan timeout{};
  std::shared_ptr<std::atomic<bool>> is_down;
  std::unordered_map<std::uint64_t, client_entry> entries;
  std::uint64_t next_tag = 1;

  void fail_all(const std::string& why) {
    finish_event f;
    f.reason = finish_reason::error;
    f.cause = error{errc::unavailable, why};
    auto entries_now = std::move(entries);
    entries.clear();
    for (auto& [tag, e] : entries_now) e.sink->on_finish(f);
  }
};

/// Where the client actor's callbacks and flags come from (remote_engine::connect).
struct client_hooks {
  std::shared_ptr<std::atomic<bool>> is_down;
  std::shared_ptr<std::atomic<bool>> is_draining;
  remote_engine::report_handler on_report;
  remote_engine::drain_handler on_drain;
  std::shared_ptr<remote_engine::step_handler_slot> on_step;
};

caf::behavior client_actor(caf::stateful_actor<client_state>* self, caf::actor host, std::string address,
                           caf::timespan timeout, client_hooks hooks) {
  auto& st = self->state;
  st.host = std::move(host);
  st.on_report = std::move(hooks.on_report);
  st.on_drain = std::move(hooks.on_drain);
  st.is_draining = std::move(hooks.is_draining);
  st.on_step = std::move(hooks.on_step);
  if (st.on_report || st.on_drain) self->send(st.host, subscribe_atom::value);
  st.address = std::move(address);
  st.timeout = timeout;
  st.is_down = std::move(hooks.is_down);
  self->monitor(st.host);
  self->set_down_handler([self](caf::down_msg& dm) {
    if (dm.source != self->state.host.address()) return;
    self->state.is_down->store(true);
    self->state.fail_all("the engine at " + self->state.address + " went away (" + to_string(dm.reason) + ")");
  });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    self->state.fail_all("the connection to the engine at " + self->state.address + " was closed");
    self->quit(msg.reason);
  });
  return {
      [self](remote_submit_atom, wire_request& w, std::shared_ptr<request_sink>& sink) {
        auto rp = self->make_response_promise<wire_submit_reply>();
        auto& st = self->state;
        if (st.is_down->load()) {
          rp.deliver(refused({errc::unavailable, "the engine at " + st.address + " went away"}));
          return rp;
        }
        const std::uint64_t tag = st.next_tag++;
        st.entries[tag] = client_entry{std::move(sink), std::nullopt, false};
        self->request(st.host, st.timeout, remote_submit_atom::value, std::move(w), tag)
            .then(
                [self, rp, tag](wire_submit_reply& r) mutable {
                  auto it = self->state.entries.find(tag);
                  if (r.failure) {
                    self->state.entries.erase(tag);
                    rp.deliver(std::move(r));
                    return;
                  }
                  if (it != self->state.entries.end()) {
                    it->second.engine_id = r.id;
                    if (it->second.is_cancel_pending) self->send(self->state.host, cancel_atom::value, r.id);
                  }
                  rp.deliver(wire_submit_reply{tag, std::nullopt});
                },
                [self, rp, tag](caf::error& e) mutable {
                  self->state.entries.erase(tag);
                  rp.deliver(refused({errc::unavailable, "the engine at " + self->state.address +
                                                             " did not take the request: " + self->system().render(e)}));
                });
        return rp;
      },
      [self](token_atom, std::uint64_t tag, const token_event& ev) {
        auto it = self->state.entries.find(tag);
        if (it != self->state.entries.end()) it->second.sink->on_token(ev);
      },
      [self](finished_atom, std::uint64_t tag, const finish_event& ev) {
        auto it = self->state.entries.find(tag);
        if (it == self->state.entries.end()) return;
        auto sink = std::move(it->second.sink);
        self->state.entries.erase(it);
        sink->on_finish(ev);
      },
      [self](cancel_atom, std::uint64_t tag) {
        auto it = self->state.entries.find(tag);
        if (it == self->state.entries.end()) return;
        if (it->second.engine_id) self->send(self->state.host, cancel_atom::value, *it->second.engine_id);
        else it->second.is_cancel_pending = true;
      },
      [self](engine_report_atom, const engine_report& report) {
        if (self->current_sender() == self->state.host.address() && self->state.on_report)
          self->state.on_report(report);
      },
      [self](draining_atom) {
        auto& st = self->state;
        if (self->current_sender() != st.host.address() || st.is_draining->exchange(true)) return;
        if (st.on_drain) st.on_drain();
      },
      [self](step_subscribe_atom, bool is_on) { self->send(self->state.host, step_subscribe_atom::value, is_on); },
      [self](step_summary_atom, const step_summary& step) {
        if (self->current_sender() == self->state.host.address()) self->state.on_step->call(step);
      },
      [self](metrics_atom) {
        auto rp = self->make_response_promise<std::string>();
        if (self->state.is_down->load()) {
          rp.deliver(caf::make_error(caf::sec::request_receiver_down));
          return rp;
        }
        self->request(self->state.host, self->state.timeout, metrics_atom::value)
            .then([rp](std::string& text) mutable { rp.deliver(std::move(text)); },
                  [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [self](health_atom) {
        auto rp = self->make_response_promise<engine_health>();
        if (self->state.is_down->load()) {
          rp.deliver(caf::make_error(caf::sec::request_receiver_down));
          return rp;
        }
        self->request(self->state.host, self->state.timeout, health_atom::value)
            .then([rp](engine_health& h) mutable { rp.deliver(std::move(h)); },
                  [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
  };
}

}  // namespace

void configure_wire_heartbeats(caf::actor_system_config& cfg, double interval_s, double timeout_s) {
  cfg.set("middleman.heartbeat-interval", seconds(interval_s));
  cfg.set("middleman.connection-timeout", seconds(timeout_s));
}

wire_system_config::wire_system_config(double heartbeat_interval_s, double connection_timeout_s) {
  announce_wire_types(*this);
  configure_wire_heartbeats(*this, heartbeat_interval_s, connection_timeout_s);
  load<caf::io::middleman>();
}

result<std::unique_ptr<engine_host>> engine_host::start(caf::actor_system& net, engine& eng, const std::string& host,
                                                        std::uint16_t port) {
  return start(net, std::vector<named_engine>{{&eng, {}}}, host, port);
}

result<std::unique_ptr<engine_host>> engine_host::start(caf::actor_system& net, std::vector<named_engine> engines,
                                                        const std::string& host, std::uint16_t port) {
  if (engines.empty()) return make_error(errc::invalid_argument, "an engine host needs an engine");
  // One engine: no directory (a router asking for it by name gets its own name checked).
  auto directory = engines.size() > 1 ? std::make_shared<host_directory>() : nullptr;
  std::vector<caf::actor> actors;
  std::vector<engine*> engs;
  for (const auto& e : engines) {
    auto grammars = std::make_shared<grammar_cache>(make_grammar_vocab(*e.eng->model().tok));
    actors.push_back(net.spawn(host_actor, e.eng, std::move(grammars), directory));
    engs.push_back(e.eng);
    if (directory)
      for (const auto& name : e.names) directory->emplace_back(name, actors.back());
  }
  const auto& published = actors.front();
  // With [cluster] tls the OpenSSL module serves the port (actors/cluster/cluster_tls.hpp).
  auto bound = net.has_openssl_manager()
                   ? caf::openssl::publish(published, port, host.c_str(), /*reuse=*/true)
                   : net.middleman().publish(published, port, host.c_str(), /*reuse=*/true);  // a restart takes its port back
  if (!bound) {
    for (const auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return make_error(errc::io_error,
                      "cannot serve the engine on " + host + ":" + std::to_string(port) + ": " + net.render(bound.error()));
  }
  for (std::size_t i = 0; i < engs.size(); ++i) engs[i]->set_cache_sink(std::make_shared<report_sink>(actors[i]));
  return std::unique_ptr<engine_host>(new engine_host(net, std::move(engs), std::move(actors), *bound));
}

void engine_host::drain() {
  for (const auto& a : actors_) caf::anon_send(a, draining_atom::value);
}

engine_host::~engine_host() {
  for (auto* e : engines_) e->set_cache_sink(nullptr);
  if (net_.has_openssl_manager()) {
    // caf::openssl::unpublish of Debian's 0.17 headers does not compile: ask the module's actor.
    caf::make_function_view(net_.openssl_manager().actor_handle())(caf::unpublish_atom::value, actors_.front().address(),
                                                                   port_);
  } else {
    net_.middleman().unpublish(actors_.front(), port_);
  }
  for (const auto& a : actors_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

result<std::unique_ptr<remote_engine>> remote_engine::connect(caf::actor_system& net, const std::string& host,
                                                              std::uint16_t port, double timeout_s,
                                                              report_handler on_report, drain_handler on_drain,
                                                              const std::string& model) {
  const std::string address = host + ":" + std::to_string(port);
  auto remote = net.has_openssl_manager() ? caf::openssl::remote_actor(net, host, port)
                                          : net.middleman().remote_actor(host, port);
  if (!remote) return make_error(errc::unavailable, "no engine at " + address + ": " + net.render(remote.error()));
  if (!model.empty()) {
    caf::scoped_actor self{net};
    result<caf::actor> host_of_model = make_error(errc::unavailable, "the engine at " + address + " did not answer");
    self->request(*remote, seconds(timeout_s), model_host_atom::value, model)
        .receive([&](caf::actor& a) { host_of_model = std::move(a); },
                 [&](caf::error& e) {
                   const bool is_unknown = e.category() == caf::atom("system") && e.code() == static_cast<std::uint8_t>(caf::sec::invalid_argument);
                   host_of_model = make_error(is_unknown ? errc::not_found : errc::unavailable,
                                              "the engine at " + address + " serves no model `" + model + "`: " +
                                                  net.render(e));
                 });
    if (!host_of_model) return std::unexpected(host_of_model.error());
    *remote = std::move(*host_of_model);
  }
  auto is_down = std::make_shared<std::atomic<bool>>(false);
  auto is_draining = std::make_shared<std::atomic<bool>>(false);
  auto on_step = std::make_shared<step_handler_slot>();
  auto client = net.spawn(client_actor, *remote, address, seconds(timeout_s),
                          client_hooks{is_down, is_draining, std::move(on_report), std::move(on_drain), on_step});
  return std::unique_ptr<remote_engine>(new remote_engine(net, std::move(client), std::move(is_down),
                                                          std::move(is_draining), std::move(on_step), address,
                                                          timeout_s));
}

void remote_engine::step_handler_slot::set(step_handler handler) {
  std::lock_guard lock(mutex_);
  handler_ = std::move(handler);
}

void remote_engine::step_handler_slot::call(const step_summary& step) {
  std::lock_guard lock(mutex_);
  if (handler_) handler_(step);
}

void remote_engine::set_step_handler(step_handler handler) {
  const bool is_on = static_cast<bool>(handler);
  on_step_->set(std::move(handler));
  caf::anon_send(client_, step_subscribe_atom::value, is_on);
}

remote_engine::~remote_engine() { caf::anon_send_exit(client_, caf::exit_reason::user_shutdown); }

result<request_id> remote_engine::submit(generate_request request, std::shared_ptr<request_sink> sink) {
  std::optional<grammar_spec> grammar;
  if (request.params.grammar) {
    grammar = request.params.grammar->source();
    if (!grammar)
      return make_error(errc::invalid_argument, "a grammar built without a grammar_spec cannot be sent to another process");
    request.params.grammar.reset();  // compiled again by the engine
  }
  wire_request w{std::move(request), std::move(grammar)};
  caf::scoped_actor self{net_};
  result<request_id> out = make_error(errc::unavailable, "the engine at " + address_ + " did not answer");
  // The client actor gives up on the host after the timeout; this waits a little longer.
  self->request(client_, seconds(timeout_s_ + 5.0), remote_submit_atom::value, std::move(w), std::move(sink))
      .receive(
          [&](wire_submit_reply& r) {
            if (r.failure) out = std::unexpected(std::move(*r.failure));
            else out = r.id;
          },
          [&](caf::error& e) { out = make_error(errc::unavailable, "the engine at " + address_ + ": " + net_.render(e)); });
  return out;
}

void remote_engine::cancel(request_id id) { caf::anon_send(client_, cancel_atom::value, std::uint64_t{id}); }

result<std::string> remote_engine::metrics_text(double timeout_s) {
  caf::scoped_actor self{net_};
  result<std::string> out = make_error(errc::unavailable, "the engine at " + address_ + " did not answer");
  self->request(client_, seconds(timeout_s), metrics_atom::value)
      .receive([&](std::string& text) { out = std::move(text); },
               [&](caf::error& e) {
                 out = make_error(errc::unavailable, "the engine at " + address_ + ": " + net_.render(e));
               });
  return out;
}

result<engine_health> remote_engine::health() {
  caf::scoped_actor self{net_};
  result<engine_health> out = make_error(errc::unavailable, "the engine at " + address_ + " did not answer");
  self->request(client_, seconds(timeout_s_ + 5.0), health_atom::value)
      .receive([&](engine_health& h) { out = std::move(h); },
               [&](caf::error& e) {
                 out = make_error(errc::unavailable, "the engine at " + address_ + ": " + net_.render(e));
               });
  return out;
}

}  // namespace inflight
