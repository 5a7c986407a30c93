#pragma once
// The serving benchmark's client: one request per connection, streamed over SSE
// (/v1/completions, stream=true) or inflight's WebSocket (/v1/ws), timed on this
// process's monotonic clock. Everything runs on one io_context thread.

#include <boost/asio/io_context.hpp>

#include <functional>
#include <string>
#include <vector>

#include "apps/inflight/bench_response_timeline.hpp"
#include "core/bench/bench_metrics.hpp"
#include "core/bench/dataset.hpp"

namespace inflight::app {

struct client_target {
  std::string host;
  std::string port;
  std::string base_path;   ///< path prefix before /v1 (usually empty)
  bool use_ws = false;
  std::string model;       ///< "model" field; empty = not sent
  /// LoRA adapters by name (vLLM's --lora-modules): request i's "model" is entry i mod n.
  std::vector<std::string> lora_modules;
  /// llama.cpp's server with N adapters loaded (--lora ... --lora-init-without-apply):
  /// request i applies adapter i mod N alone ("lora": [{"id", "scale": 1}]); 0 = none.
  int llamacpp_loras = 0;
  bool ignore_eos = true;
  double timeout_s = 600.0;
  bool keep_text = false;  ///< keep each request's generated text in its record (structured checks it)
};

/// Splits "http://host:port[/prefix]" (ws:// also accepted).
result<client_target> parse_url(const std::string& url);

/// The JSON body of a request (completions or a WebSocket generate message); a prompt
/// with a json_schema asks for it in `response_format` (type json_schema).
std::string request_body(const client_target& target, const bench::bench_prompt& prompt, int index, int max_tokens);

/// Starts one request; `done` runs on the io thread with the record (start_s is the
/// absolute send time, the caller makes it relative).
void start_request(boost::asio::io_context& ioc, const client_target& target, const bench::bench_prompt& prompt,
                   int index, int max_tokens, request_done done);

/// GET `path` and return the body (for /metrics); blocking, for use outside a run.
result<std::string> http_get(const client_target& target, const std::string& path);

}  // namespace inflight::app
