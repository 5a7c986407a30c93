#include "actors/gateway/server.hpp"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>

#include "actors/gateway/gateway_state.hpp"
#include "actors/gateway/model_table.hpp"
#include "actors/gateway/http_session.hpp"
#include "actors/tls_files.hpp"

namespace inflight::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

struct server::impl {
  model_table models;
  gateway_state* state = nullptr;  ///< the first model's: settings, keys, the sessions
  /// Every model's state: shutdown drains them all.
  std::vector<gateway_state*> states() const { return models.all(); }
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  std::unique_ptr<net::ssl::context> tls;  ///< set: every connection is TLS (HTTPS, WSS)
  std::optional<net::signal_set> signals;
  std::vector<std::thread> io_threads;
  std::mutex mutex;
  std::condition_variable cv;
  bool is_shutdown_requested = false;
  bool is_shutdown_running = false;
  bool is_stopped = false;
  std::string host, warning, chat_name, embeddings_summary;
  int port = 0;

  void do_accept();
  void run_io();
  void shut_down();
  void request_shutdown();
};

void server::impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;
    if (!ec) {
      // Streams send many small writes: without TCP_NODELAY, Nagle's algorithm and the
      // peer's delayed ACKs hold tokens back for tens of milliseconds.
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      beast::tcp_stream tcp(std::move(socket));
      auto session = std::make_shared<http_session>(tls ? edge_stream(std::move(tcp), *tls) : edge_stream(std::move(tcp)),
                                                    models);
      state->add_session(session);
      session->run();
    }
    do_accept();
  });
}

void server::impl::run_io() {
  // A handler that throws (a bug) must not take the whole server down.
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "inflight: internal error in a connection handler: %s\n", e.what());
    }
  }
}

namespace {

template <class Pred>
void wait_for(Pred is_done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!is_done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

/// The server's TLS context from server.tls_cert_file and tls_key_file; nullptr when
/// neither is set (plain HTTP).
result<std::unique_ptr<net::ssl::context>> try_make_tls(const server_settings& s) {
  if (s.tls_cert_file.empty() && s.tls_key_file.empty()) return nullptr;
  if (s.tls_cert_file.empty() || s.tls_key_file.empty())
    return make_error(errc::invalid_argument, "HTTPS needs both server.tls_cert_file and server.tls_key_file");
  tls_files files{s.tls_cert_file, s.tls_key_file, {}, "server.tls_cert_file", "server.tls_key_file"};
  if (auto ok = try_check_tls_files(files); !ok) return std::unexpected(ok.error());
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(s.tls_cert_file, ec);
  if (!ec) ctx->use_private_key_file(s.tls_key_file, net::ssl::context::pem, ec);
  if (ec) return make_error(errc::invalid_argument, "server TLS: " + ec.message());
  return ctx;
}

}  // namespace

// The gateway drains its own requests before engine::shutdown(), and the io threads
// have ended by then: CAF 0.17 keeps actor references alive in the threads that sent
// messages, and ~actor_system waits forever while such a thread still runs.
void server::impl::shut_down() {
  for (auto* s : states()) s->set_shutting_down();
  net::post(acceptor.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    if (signals) signals->cancel(ignored);
  });
  // Requests count on their model's state; the sessions are registered on the first.
  const auto num_live = [this] {
    int n = 0;
    for (auto* s : states()) n += s->num_live_requests();
    return n;
  };
  wait_for([&] { return num_live() == 0; }, state->settings().shutdown_grace_s);
  if (num_live() > 0) {
    state->abort_requests();
    wait_for([&] { return num_live() == 0; }, 30.0);
  }
  // Every stream has its final event now; let the connections flush and close.
  wait_for([&] {
    state->stop_sessions();
    return state->num_sessions() == 0;
  }, 5.0);
  work.reset();
  ioc.stop();
  for (auto& t : io_threads) t.join();
  for (auto* s : states()) s->eng().shutdown(0.0);
}

void server::impl::request_shutdown() {
  std::lock_guard lock(mutex);
  is_shutdown_requested = true;
  cv.notify_all();
}

server::server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

server::~server() {
  request_shutdown();
  wait();
}

result<std::unique_ptr<server>> server::try_start(engine_api& eng, const server_options& options) {
  return try_start(std::vector<model_route>{{&eng, {}}}, options);
}

result<std::unique_ptr<server>> server::try_start(std::vector<model_route> models, const server_options& options) {
  if (models.empty() || models.front().eng == nullptr) return make_error(errc::invalid_argument, "a server needs a model");
  const auto& settings = models.front().eng->settings().server;
  auto keys = api_keys::try_load(settings);
  if (!keys) return std::unexpected(keys.error());
  auto p = std::make_unique<impl>();
  for (auto& route : models) {
    engine_api& eng = *route.eng;
    std::string warning;
    auto model = try_make_served_model(eng.model(), eng.settings(), &warning);
    if (!model) return std::unexpected(model.error());
    model->metrics = &eng.metrics();
    model->aliases = route.aliases;
    const std::string prefix = models.size() > 1 ? model->name + ": " : "";
    if (!warning.empty()) p->warning += (p->warning.empty() ? "" : "; ") + prefix + warning;
    p->chat_name += (p->chat_name.empty() ? "" : "; ") + prefix + model->chat_template_name +
                    " (tool calls: " + to_string(model->tool_style.format) + ")";
    p->embeddings_summary += (p->embeddings_summary.empty() ? "" : "; ") + prefix +
                             (model->embeddings ? model->embedding.origin : "off: " + model->embeddings_unavailable);
    p->models.add(std::make_unique<gateway_state>(eng, std::move(*model), settings, options.version, *keys),
                  std::move(route.aliases));
  }
  p->state = &p->models.first();
  p->models.set_control(options.control);
  auto tls = try_make_tls(settings);
  if (!tls) return std::unexpected(tls.error());
  p->tls = std::move(*tls);
  boost::system::error_code ec;
  tcp::resolver resolver(p->ioc);
  auto endpoints = resolver.resolve(settings.host, std::to_string(settings.port), ec);
  if (ec || endpoints.empty())
    return make_error(errc::io_error, "cannot resolve server.host " + settings.host + ": " + ec.message());
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  p->acceptor.open(endpoint.protocol(), ec);
  if (!ec) p->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) p->acceptor.bind(endpoint, ec);
  if (!ec) p->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(errc::io_error, "cannot listen on " + settings.host + ":" + std::to_string(settings.port) +
                                          ": " + ec.message());
  }
  const auto local = p->acceptor.local_endpoint();
  p->host = local.address().to_string();
  p->port = local.port();
  auto* raw = p.get();
  if (options.handle_signals) {
    p->signals.emplace(p->ioc, SIGINT, SIGTERM);
    p->signals->async_wait([raw](boost::system::error_code e, int) {
      if (!e) raw->request_shutdown();
    });
  }
  p->do_accept();
  const int num_threads = std::max(1, settings.io_threads);
  for (int i = 0; i < num_threads; ++i) p->io_threads.emplace_back([raw] { raw->run_io(); });
  return std::unique_ptr<server>(new server(std::move(p)));
}

std::string server::host() const { return impl_->host; }
bool server::is_tls() const { return impl_->tls != nullptr; }
std::size_t server::num_api_keys() const { return impl_->state->keys().size(); }
int server::port() const { return impl_->port; }
const std::string& server::chat_template_name() const { return impl_->chat_name; }
const std::string& server::warning() const { return impl_->warning; }
const std::string& server::embeddings_summary() const { return impl_->embeddings_summary; }

void server::request_shutdown() { impl_->request_shutdown(); }

void server::wait() {
  // The shutdown runs on the waiting thread: engine::shutdown() must be called from
  // the thread that started the engine (it hangs in CAF otherwise).
  auto& p = *impl_;
  std::unique_lock lock(p.mutex);
  p.cv.wait(lock, [&] { return p.is_shutdown_requested; });
  if (p.is_shutdown_running) {
    p.cv.wait(lock, [&] { return p.is_stopped; });
    return;
  }
  p.is_shutdown_running = true;
  lock.unlock();
  p.shut_down();
  lock.lock();
  p.is_stopped = true;
  p.cv.notify_all();
}

}  // namespace inflight::gateway
