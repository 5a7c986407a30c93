#pragma once
/// The HTTP / WebSocket server in front of an engine: a listener on server.host:port
/// (port 0 = any free port), server.io_threads io threads, one strand per connection,
/// and graceful shutdown (SIGINT / SIGTERM when asked to handle signals).
///
/// Shutdown: stop accepting, /health and new requests answer 503, the engine finishes
/// what runs for up to server.shutdown_grace_s and aborts the rest (their streams end
/// with finish_reason "abort"), every connection flushes and closes, the io threads end.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "actors/engine_api.hpp"
#include "actors/model_control.hpp"
#include "core/base/error.hpp"

namespace inflight::gateway {

/// One model of a server that serves several: its engine (which must outlive the server)
/// and the other names that choose it besides its served name.
struct model_route {
  engine_api* eng = nullptr;
  std::vector<std::string> aliases;
};

struct server_options {
  bool handle_signals = false;     ///< SIGINT / SIGTERM start a graceful shutdown
  std::string version = "unknown"; ///< GET /version
  /// Several models loaded on demand (actors/models/model_pool.hpp): their states in
  /// /v1/models, POST /v1/models/{name}/load and /unload, a request's keep_alive. Null:
  /// every model is always loaded. Must outlive the server.
  model_control* control = nullptr;
};

class server {
 public:
  /// Binds and starts serving `eng` (which must outlive the server) with
  /// eng.settings().server. Fails (io_error) when the address cannot be bound or a key or
  /// certificate file cannot be read, or (invalid_argument) for a bad chat template
  /// setting, API key, certificate or private key.
  static result<std::unique_ptr<server>> try_start(engine_api& eng, const server_options& options = {});
  /// Serves several models ([[models]]), each request on the one its `model` field
  /// names (model_table.hpp); the server settings are the first engine's.
  static result<std::unique_ptr<server>> try_start(std::vector<model_route> models, const server_options& options = {});
  /// Shuts down (with the configured grace) if still running, then joins the io threads.
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The bound address and port (the real port when 0 was asked for).
  std::string host() const;
  int port() const;
  /// True when the server speaks HTTPS / WSS (server.tls_cert_file).
  bool is_tls() const;
  /// How many API keys it accepts (0: open).
  std::size_t num_api_keys() const;
  /// Chat template in use ("plain" = the fallback) with the tool-call format, e.g.
  /// "plain (tool calls: json)"; and any start-up warning about it.
  const std::string& chat_template_name() const;
  /// How /v1/embeddings pools ("mean pooling (mean in qwen3.pooling_type), normalised"), or why it is off.
  const std::string& embeddings_summary() const;
  const std::string& warning() const;

  /// Starts a graceful shutdown and returns at once (what a signal does).
  void request_shutdown();
  /// Blocks until a shutdown is asked for (a signal or request_shutdown()), then runs it
  /// on the calling thread, which must be the one that started the engine.
  void wait();

  struct impl;

 private:
  explicit server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace inflight::gateway
