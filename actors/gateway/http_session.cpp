#include "actors/gateway/http_session.hpp"

#include <chrono>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "actors/gateway/engine_events.hpp"
#include "actors/gateway/events_session.hpp"
#include "actors/gateway/ws_session.hpp"

namespace inflight::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

std::chrono::milliseconds seconds_of(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.001, s) * 1e3));
}

}  // namespace

http_session::http_session(net::ip::tcp::socket&& socket, gateway_state& state)
    : stream_(std::move(socket)), state_(state), stall_timer_(stream_.get_executor()) {}

void http_session::run() {
  net::dispatch(stream_.get_executor(), beast::bind_front_handler(&http_session::do_read, shared_from_this()));
}

void http_session::stop() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->is_stopping_ = true;
    if (!self->call_ && !self->reply_ && !self->is_streaming_) self->close();
  });
}

void http_session::abort_requests() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->call_) self->call_->cancel();
  });
}

void http_session::do_read() {
  if (is_closed_) return;
  if (is_stopping_) return close();
  parser_.emplace();
  parser_->body_limit(static_cast<std::uint64_t>(state_.settings().max_body_bytes));
  parser_->header_limit(static_cast<std::uint32_t>(state_.settings().max_header_bytes));
  stream_.expires_after(seconds_of(state_.settings().idle_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void http_session::on_read(beast::error_code ec) {
  if (is_closed_) return;
  if (ec == http::error::end_of_stream) return close();
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return send_reply(error_reply(payload_too_large(state_.settings().max_body_bytes)));
  }
  if (ec == http::error::header_limit) {
    keep_alive_ = false;
    return send_reply(error_reply(api_error{431, "invalid_request_error",
                                            "the request headers are larger than " +
                                                std::to_string(state_.settings().max_header_bytes) +
                                                " bytes (server.max_header_bytes)",
                                            {}, "header_too_large"}));
  }
  if (ec == http::error::partial_message) {
    keep_alive_ = false;
    return send_reply(error_reply(bad_request("the request ended before its body was complete", {}, "truncated_body")));
  }
  if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
    keep_alive_ = false;
    return send_reply(error_reply(bad_request("malformed HTTP request: " + ec.message(), {}, "bad_http")));
  }
  if (ec) return close();
  handle(parser_->release());
}

void http_session::handle(request_t&& req) {
  keep_alive_ = req.keep_alive();
  version_ = req.version();
  is_head_ = req.method() == http::verb::head;
  const std::string path(target_path(std::string_view(req.target().data(), req.target().size())));
  const std::string method(req.method_string());
  auto kind = classify(method, path);
  if (kind == route_kind::websocket && beast::websocket::is_upgrade(req)) {
    stream_.expires_never();
    std::make_shared<ws_session>(stream_.release_socket(), state_)->run(std::move(req));
    is_closed_ = true;  // the socket now belongs to the WebSocket session
    return;
  }
  if (kind == route_kind::engine_events) return start_engine_events();
  if (kind == route_kind::completion || kind == route_kind::chat || kind == route_kind::rerank ||
      kind == route_kind::score || kind == route_kind::embeddings) {
    if (state_.is_shutting_down())
      return send_reply(error_reply(shutting_down()));
    if (kind == route_kind::rerank || kind == route_kind::score) return start_scoring(kind, req.body());
    if (kind == route_kind::embeddings) return start_embedding(req.body());
    return start_generation(kind, req.body());
  }
  send_reply(answer(state_, method, path, req.body()));
}

void http_session::start_engine_events() {
  auto subscription = try_subscribe_engine_events(state_);
  if (!subscription) return send_reply(error_reply(subscription.error()));
  stream_.expires_never();
  std::make_shared<events_session>(stream_.release_socket(), state_, std::move(*subscription))->run(version_);
  is_closed_ = true;  // the socket now belongs to the events session
}

void http_session::start_generation(route_kind kind, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto parsed = try_parse_request(*body, kind == route_kind::chat ? api_kind::chat : api_kind::completion,
                                  state_.model());
  if (!parsed) return send_reply(error_reply(parsed.error()));
  auto ex = stream_.get_executor();
  post_fn post = [ex](std::function<void()> task) { net::post(ex, std::move(task)); };
  auto self = shared_from_this();
  is_streaming_ = parsed->stream;
  auto call = std::make_shared<completion_call>(state_, std::move(*parsed), std::move(post),
                                                [self](call_output out) { self->on_output(std::move(out)); });
  call_ = call;
  if (auto err = call->try_start()) {
    call_.reset();
    is_streaming_ = false;
    pending_.clear();
    return send_reply(error_reply(*err));
  }
  stream_.expires_never();
  start_watch();
  if (is_streaming_) write_stream_header();
}

std::function<void(api_result<nlohmann::json>)> http_session::json_emitter() {
  return [self = shared_from_this()](api_result<nlohmann::json> out) {
    if (!out) return self->on_output({out.error().status, dump_json(error_body(out.error())), true});
    self->on_output({200, dump_json(*out), true});
  };
}

template <class Call>
void http_session::start_json_call(std::shared_ptr<Call> call) {
  call_ = call;
  if (auto err = call->try_start()) {
    call_.reset();
    return send_reply(error_reply(*err));
  }
  stream_.expires_never();
  start_watch();
}

void http_session::start_scoring(route_kind kind, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto parsed = kind == route_kind::rerank ? try_parse_rerank(*body, state_.model())
                                           : try_parse_score(*body, state_.model());
  if (!parsed) return send_reply(error_reply(parsed.error()));
  auto ex = stream_.get_executor();
  post_fn post = [ex](std::function<void()> task) { net::post(ex, std::move(task)); };
  start_json_call(std::make_shared<score_call>(state_, std::move(*parsed), std::move(post), json_emitter()));
}

void http_session::start_embedding(const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto parsed = try_parse_embeddings(*body, state_.model());
  if (!parsed) return send_reply(error_reply(parsed.error()));
  auto ex = stream_.get_executor();
  post_fn post = [ex](std::function<void()> task) { net::post(ex, std::move(task)); };
  start_json_call(std::make_shared<embed_call>(state_, std::move(*parsed), std::move(post), json_emitter()));
}

void http_session::send_reply(http_reply reply) {
  auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(reply.status), version_);
  res->set(http::field::server, "inflight");
  res->set(http::field::content_type, reply.content_type);
  if (!reply.allow.empty()) res->set(http::field::allow, reply.allow);
  // A load refusal (queue_full, queue_timeout): the client should come back later.
  if (reply.status == 429) res->set(http::field::retry_after, std::to_string(state_.settings().retry_after_s));
  const bool keep_alive = keep_alive_ && !is_stopping_ && !is_gone_;
  res->keep_alive(keep_alive);
  res->body() = std::move(reply.body);
  res->prepare_payload();
  if (is_head_) res->body().clear();
  reply_ = res;
  stream_.expires_after(seconds_of(state_.settings().idle_timeout_s));
  http::async_write(stream_, *res, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
    self->on_reply_written(ec, keep_alive);
  });
}

void http_session::on_reply_written(beast::error_code ec, bool keep_alive) {
  reply_.reset();
  if (ec) return close();
  if (!keep_alive) return linger_close();
  next_request();
}

void http_session::next_request() {
  is_streaming_ = false;
  is_header_sent_ = is_last_queued_ = is_last_written_ = false;
  if (is_stopping_) return close();  // the response is complete: nothing more to read
  if (!keep_alive_) return linger_close();
  // The watch read must end before the next request is read; on_watch resumes.
  if (is_watching_) {
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
    return;
  }
  do_read();
}

// --- streaming -------------------------------------------------------------------

void http_session::on_output(call_output out) {
  if (out.is_last) call_.reset();  // the call holds this session: break the cycle
  if (is_gone_ || is_closed_) return;
  if (!is_streaming_) return send_reply({out.status, "application/json", std::move(out.bytes), {}});
  pending_ += out.bytes;
  if (out.is_last) is_last_queued_ = true;
  // A reader slower than the engine: the stream pauses instead of the buffer growing.
  if (call_ && pending_.size() >= std::size_t(state_.settings().max_stream_buffer_bytes)) call_->pause();
  write_stream();
}

void http_session::write_stream_header() {
  is_chunked_ = version_ >= 11;
  if (!is_chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection closes
  stream_header_ = std::make_shared<http::response<http::empty_body>>(http::status::ok, version_);
  auto& res = *stream_header_;
  res.set(http::field::server, "inflight");
  res.set(http::field::content_type, "text/event-stream; charset=utf-8");
  res.set(http::field::cache_control, "no-cache");
  res.set("X-Accel-Buffering", "no");
  res.keep_alive(keep_alive_ && !is_stopping_);
  res.chunked(is_chunked_);
  stream_serializer_ = std::make_shared<http::response_serializer<http::empty_body>>(res);
  is_writing_ = true;
  arm_stall_timer();
  http::async_write_header(stream_, *stream_serializer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->is_writing_ = false;
    self->stall_timer_.cancel();
    if (ec) return self->client_gone();
    self->is_header_sent_ = true;
    self->write_stream();
  });
}

void http_session::write_stream() {
  if (is_writing_ || !is_header_sent_ || is_gone_ || is_closed_ || is_last_written_) return;
  auto on_written = [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_stream_written(ec); };
  if (pending_.empty()) {
    if (!is_last_queued_) return;
    is_last_written_ = true;
    is_writing_ = true;
    arm_stall_timer();
    if (is_chunked_) return net::async_write(stream_, http::make_chunk_last(), std::move(on_written));
    return net::post(stream_.get_executor(), [on_written]() mutable { on_written({}, 0); });
  }
  writing_ = std::move(pending_);
  pending_.clear();
  is_writing_ = true;
  arm_stall_timer();
  if (is_chunked_) {
    net::async_write(stream_, http::make_chunk(net::buffer(writing_)), std::move(on_written));
  } else {
    net::async_write(stream_, net::buffer(writing_), std::move(on_written));
  }
  // The buffer has room again: what a paused stream held joins it as one chunk per choice.
  if (call_ && call_->is_paused()) call_->resume();
}

void http_session::on_stream_written(beast::error_code ec) {
  is_writing_ = false;
  stall_timer_.cancel();
  writing_.clear();
  if (ec) return client_gone();
  if (!is_last_written_) return write_stream();
  stream_header_.reset();
  stream_serializer_.reset();
  next_request();
}

void http_session::arm_stall_timer() {
  // A client that stops reading for a whole idle timeout is treated as gone.
  stall_timer_.expires_after(seconds_of(state_.settings().idle_timeout_s));
  stall_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec && self->is_writing_) self->client_gone();
  });
}

// --- disconnect detection ---------------------------------------------------------

void http_session::start_watch() {
  is_watching_ = true;
  stream_.socket().async_read_some(net::buffer(watch_buf_),
                                   [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                                     self->on_watch(ec, n);
                                   });
}

void http_session::on_watch(beast::error_code ec, std::size_t num_bytes) {
  is_watching_ = false;
  if (is_closed_) return;
  if (is_lingering_) return ec ? close() : start_watch();  // drain and discard
  const bool is_busy = call_ || reply_ || (is_streaming_ && !is_last_written_);
  if (!ec) {
    // A pipelined request: keep its bytes for the next read.
    auto dst = buffer_.prepare(num_bytes);
    net::buffer_copy(dst, net::buffer(watch_buf_.data(), num_bytes));
    buffer_.commit(num_bytes);
    if (is_busy) return start_watch();
    return do_read();
  }
  if (ec == net::error::operation_aborted && !is_busy) return do_read();
  client_gone();
}

void http_session::client_gone() {
  if (is_gone_) return;
  is_gone_ = true;
  if (call_) call_->cancel();
  close();
}

void http_session::linger_close() {
  // Half-close, then drain what the client still sends (for up to server.linger_s) so
  // that it reads our answer instead of a reset (a 413 is sent before the body was read).
  if (is_closed_ || is_lingering_) return;
  is_lingering_ = true;
  beast::error_code ignored;
  stream_.expires_never();
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stall_timer_.expires_after(seconds_of(state_.settings().linger_s));
  stall_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->close();
  });
  if (!is_watching_) start_watch();
}

void http_session::close() {
  if (is_closed_) return;
  is_closed_ = true;
  stall_timer_.cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace inflight::gateway
