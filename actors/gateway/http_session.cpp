#include "actors/gateway/http_session.hpp"

#include <chrono>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "actors/gateway/anthropic_call.hpp"
#include "actors/gateway/anthropic_shape.hpp"
#include "actors/gateway/api_keys.hpp"
#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/engine_events.hpp"
#include "actors/gateway/events_session.hpp"
#include "actors/gateway/responses_call.hpp"
#include "actors/gateway/responses_request.hpp"
#include "actors/gateway/sse.hpp"
#include "actors/gateway/ws_session.hpp"

namespace inflight::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

std::chrono::milliseconds seconds_of(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.001, s) * 1e3));
}

/// The Authorization header's value; nullopt when there is none.
template <class Request>
std::optional<std::string_view> authorization_of(const Request& req) {
  const auto it = req.find(http::field::authorization);
  if (it == req.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

/// The key of an `x-api-key` header (Anthropic's clients); nullopt when there is none.
template <class Request>
std::optional<std::string_view> x_api_key_of(const Request& req) {
  const auto it = req.find(boost::beast::string_view(api_key_header.data(), api_key_header.size()));
  if (it == req.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

}  // namespace

http_session::http_session(edge_stream&& stream, model_table& models)
    : stream_(std::move(stream)),
      models_(models),
      state_(&models.first()),
      writer_(stream_.get_executor(),
              {std::size_t(std::max<std::int64_t>(1, models.first().settings().max_stream_buffer_bytes)),
               session_writer::limits{}.max_queued_frames, models.first().settings().idle_timeout_s, true}),
      linger_timer_(stream_.get_executor()) {}

void http_session::run() {
  writer_.start(weak_from_this(), stream_handlers());
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    if (!self->stream_.is_tls()) return self->do_read();
    self->stream_.tcp().expires_after(seconds_of(self->state_->settings().idle_timeout_s));
    self->stream_.async_handshake([self](beast::error_code ec) { self->on_handshake(ec); });
  });
}

void http_session::on_handshake(beast::error_code ec) {
  if (ec) return close();  // not TLS, a certificate the client refused, or too slow
  do_read();
}

void http_session::stop() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->is_stopping_ = true;
    if (self->phase_ == phase::reading || self->phase_ == phase::lingering) self->close();
  });
}

void http_session::abort_requests() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->call_) self->call_->abort();
  });
}

void http_session::do_read() {
  if (phase_ == phase::closed) return;
  if (is_stopping_) return close();
  phase_ = phase::reading;
  parser_.emplace();
  parser_->body_limit(static_cast<std::uint64_t>(state_->settings().max_body_bytes));
  parser_->header_limit(static_cast<std::uint32_t>(state_->settings().max_header_bytes));
  stream_.tcp().expires_after(seconds_of(state_->settings().idle_timeout_s));
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void http_session::on_read(beast::error_code ec) {
  if (phase_ == phase::closed) return;
  if (ec == http::error::end_of_stream) return close();
  if (ec == http::error::body_limit) {
    exchange_.is_keep_alive = false;
    return send_reply(error_reply(payload_too_large(state_->settings().max_body_bytes)));
  }
  if (ec == http::error::header_limit) {
    exchange_.is_keep_alive = false;
    return send_reply(error_reply(api_error{431, "invalid_request_error",
                                            "the request headers are larger than " +
                                                std::to_string(state_->settings().max_header_bytes) +
                                                " bytes (server.max_header_bytes)",
                                            {}, "header_too_large"}));
  }
  if (ec == http::error::partial_message) {
    exchange_.is_keep_alive = false;
    return send_reply(error_reply(bad_request("the request ended before its body was complete", {}, "truncated_body")));
  }
  if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
    exchange_.is_keep_alive = false;
    return send_reply(error_reply(bad_request("malformed HTTP request: " + ec.message(), {}, "bad_http")));
  }
  if (ec) return close();
  handle(parser_->release());
}

void http_session::handle(request_t&& req) {
  exchange_ = {req.version(), req.keep_alive(), req.method() == http::verb::head};
  const std::string path(target_path(std::string_view(req.target().data(), req.target().size())));
  const std::string method(req.method_string());
  auto kind = classify(method, path);
  // A WebSocket upgrade is checked here too: refused with a 401 before it is upgraded. A
  // browser's upgrade has no Authorization header; its key comes as a subprotocol.
  auto authorization = authorization_of(req);
  std::string derived_authorization;
  if (!authorization && kind == route_kind::websocket) {
    const auto it = req.find(http::field::sec_websocket_protocol);
    if (it != req.end()) {
      if (auto key = ws_protocol_key(std::string_view(it->value().data(), it->value().size()))) {
        derived_authorization = "Bearer " + *key;
        authorization = derived_authorization;
      }
    }
  }
  if (!authorization) {
    if (auto key = x_api_key_of(req)) {
      derived_authorization = "Bearer " + std::string(*key);
      authorization = derived_authorization;
    }
  }
  const auto reply_of = is_messages_route(kind) ? anthropic_error_reply : error_reply;
  if (auto denied = check_api_key(*state_, path, authorization)) return send_reply(reply_of(*denied));
  if (auto chosen = choose_model(kind, path, req); !chosen) {
    return send_reply(reply_of(chosen.error()));
  } else if (*chosen) {
    return send_reply(std::move(**chosen));
  }
  switch (kind) {
    case route_kind::websocket:
      if (!beast::websocket::is_upgrade(req)) break;  // answer(): 426
      stream_.tcp().expires_never();
      std::make_shared<ws_session>(std::move(stream_), models_)->run(std::move(req));
      phase_ = phase::closed;  // the socket now belongs to the WebSocket session
      return;
    case route_kind::model_action:
      if (models_.size() < 2) break;  // answer(): one model, always loaded
      return start_model_action(path);
    case route_kind::engine_events:
      return start_engine_events(query_param(std::string_view(req.target().data(), req.target().size()), "engine"));
    case route_kind::completion:
    case route_kind::chat:
    case route_kind::rerank:
    case route_kind::score:
    case route_kind::embeddings:
    case route_kind::messages:
    case route_kind::responses:
      if (state_->is_shutting_down()) return send_reply(reply_of(shutting_down()));
      if (kind == route_kind::messages) return start_messages(req.body());
      if (kind == route_kind::responses) return start_responses(req.body());
      if (kind == route_kind::rerank || kind == route_kind::score) return start_scoring(kind, req.body());
      if (kind == route_kind::embeddings) return start_embedding(req.body());
      return start_generation(kind, req.body());
    default:
      break;
  }
  send_reply(answer(*state_, kind, method, path, req.body()));
}

namespace {

/// Routes whose JSON body names the model it is for.
bool has_model_field(route_kind kind) {
  switch (kind) {
    case route_kind::completion:
    case route_kind::chat:
    case route_kind::rerank:
    case route_kind::score:
    case route_kind::embeddings:
    case route_kind::messages:
    case route_kind::responses:
    case route_kind::tokenize:
    case route_kind::detokenize:
    case route_kind::count_tokens:
      return true;
    default:
      return false;
  }
}

}  // namespace

api_result<std::optional<http_reply>> http_session::choose_model(route_kind kind, std::string_view path, const request_t& req) {
  state_ = &models_.first();
  if (models_.size() < 2) return std::nullopt;
  if (auto reply = models_.try_answer(kind, path))
    return std::move(*reply);
  if (kind == route_kind::engine_events) {
    const auto target = std::string_view(req.target().data(), req.target().size());
    if (auto name = query_param(target, "model")) {
      state_ = models_.find(*name);
      if (state_ == nullptr) {
        state_ = &models_.first();
        return std::unexpected(not_found("The model `" + *name + "` does not exist (this server serves " +
                                         models_.names() + ")", "model_not_found"));
      }
    }
    return std::nullopt;
  }
  if (!has_model_field(kind)) return std::nullopt;
  auto chosen = models_.for_body(req.body());
  if (!chosen) return std::unexpected(chosen.error());
  state_ = *chosen;
  return std::nullopt;
}

void http_session::start_engine_events(const std::optional<std::string>& engine) {
  auto subscription = try_subscribe_engine_events(*state_, engine);
  if (!subscription) return send_reply(error_reply(subscription.error()));
  stream_.tcp().expires_never();
  std::make_shared<events_session>(std::move(stream_), *state_, std::move(*subscription))->run(exchange_.version);
  phase_ = phase::closed;  // the socket now belongs to the events session
}

void http_session::start_model_action(std::string_view path) {
  auto act = models_.parse_action(path);
  if (!act) return send_reply(error_reply(act.error()));
  phase_ = phase::calling;
  stream_.tcp().expires_never();  // a load may take a while
  auto done = [self = shared_from_this(), post = poster(), a = *act](result<void> outcome) {
    post([self, a, outcome] {
      if (!outcome) return self->send_reply(error_reply(to_api_error(outcome.error())));
      const auto st = self->models_.control()->status(a.name);
      nlohmann::json body = {{"id", a.name}, {"object", "model"}, {"state", to_string(st.state)}};
      if (st.size_bytes > 0) body["size_bytes"] = st.size_bytes;
      self->send_reply(json_reply(200, body));
    });
  };
  if (act->is_load) {
    models_.control()->load(act->name, std::move(done));
  } else {
    models_.control()->unload(act->name, std::move(done));
  }
}

post_fn http_session::poster() {
  return [ex = stream_.get_executor()](std::function<void()> task) { net::post(ex, std::move(task)); };
}

void http_session::start_call(std::shared_ptr<gateway_call> call,
                              const std::function<std::optional<api_error>()>& try_start,
                              http_reply (*reply_of)(const api_error&)) {
  call_ = std::move(call);
  phase_ = phase::calling;
  if (auto err = try_start()) {
    call_.reset();
    early_stream_.clear();
    exchange_.is_sse = false;
    return send_reply(reply_of(*err));
  }
  stream_.tcp().expires_never();
  start_watch();
  if (exchange_.is_sse) begin_stream();
}

void http_session::start_generation(route_kind kind, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  const bool is_chat = kind == route_kind::chat;
  auto parsed = try_parse_request(*body, is_chat ? api_kind::chat : api_kind::completion, state_->model(),
                                  parse_ordered_body(text));
  if (!parsed) return send_reply(error_reply(parsed.error()));
  exchange_.is_sse = parsed->stream;
  auto self = shared_from_this();
  auto call = std::make_shared<completion_call>(*state_, std::move(*parsed), poster(),
                                                [self](call_output out) { self->on_output(std::move(out)); });
  start_call(call, [&call] { return call->try_start(); });
}

void http_session::start_messages(const std::string& text) {
  auto self = shared_from_this();
  auto call = try_make_messages_call(*state_, text, poster(), [self](call_output out) { self->on_output(std::move(out)); });
  if (!call) return send_reply(anthropic_error_reply(call.error()));
  exchange_.is_sse = (*call)->is_streaming();
  start_call(*call, [&call] { return (*call)->try_start(); }, anthropic_error_reply);
}

void http_session::start_responses(const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto self = shared_from_this();
  auto call = try_make_responses_call(*state_, *body, parse_ordered_body(text), poster(),
                                      [self](call_output out) { self->on_output(std::move(out)); });
  if (!call) return send_reply(error_reply(call.error()));
  exchange_.is_sse = (*call)->is_streaming();
  start_call(*call, [&call]() -> std::optional<api_error> {
    if (auto e = (*call)->try_start()) return to_responses_error(*e);
    return std::nullopt;
  });
}

std::function<void(api_result<nlohmann::json>)> http_session::json_emitter() {
  return [self = shared_from_this()](api_result<nlohmann::json> out) {
    if (!out) return self->on_output({out.error().status, dump_json(error_body(out.error())), true});
    self->on_output({200, dump_json(*out), true});
  };
}

void http_session::start_scoring(route_kind kind, const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto parsed = kind == route_kind::rerank ? try_parse_rerank(*body, state_->model())
                                           : try_parse_score(*body, state_->model());
  if (!parsed) return send_reply(error_reply(parsed.error()));
  auto call = std::make_shared<score_call>(*state_, std::move(*parsed), poster(), json_emitter());
  start_call(call, [&call] { return call->try_start(); });
}

void http_session::start_embedding(const std::string& text) {
  auto body = try_parse_json(text);
  if (!body) return send_reply(error_reply(body.error()));
  auto parsed = try_parse_embeddings(*body, state_->model());
  if (!parsed) return send_reply(error_reply(parsed.error()));
  auto call = std::make_shared<embed_call>(*state_, std::move(*parsed), poster(), json_emitter());
  start_call(call, [&call] { return call->try_start(); });
}

void http_session::send_reply(http_reply reply) {
  auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(reply.status),
                                                                 exchange_.version);
  res->set(http::field::server, "inflight");
  res->set(http::field::content_type, reply.content_type);
  if (!reply.allow.empty()) res->set(http::field::allow, reply.allow);
  // A load refusal (429: queue_full, queue_timeout) or a server that cannot serve right
  // now (503: shutting down, no engine available): the client should come back later.
  if (reply.status == 429 || reply.status == 503)
    res->set(http::field::retry_after, std::to_string(state_->settings().retry_after_s));
  if (reply.status == 401) res->set(http::field::www_authenticate, "Bearer");
  const bool keep_alive = exchange_.is_keep_alive && !is_stopping_;
  res->keep_alive(keep_alive);
  res->body() = std::move(reply.body);
  res->prepare_payload();
  if (exchange_.is_head) res->body().clear();
  reply_ = res;
  phase_ = phase::replying;
  stream_.tcp().expires_after(seconds_of(state_->settings().idle_timeout_s));
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
  if (phase_ == phase::closed) return;
  if (is_stopping_) return close();  // the response is complete: nothing more to read
  if (!exchange_.is_keep_alive) return linger_close();
  phase_ = phase::reading;
  // The watch read must end before the next request is read; on_watch resumes.
  if (watch_.is_watching()) {
    beast::error_code ignored;
    stream_.tcp().socket().cancel(ignored);
    return;
  }
  do_read();
}

// --- streaming -------------------------------------------------------------------

void http_session::on_output(call_output out) {
  if (out.is_last) call_.reset();  // the call holds this session: break the cycle
  if (phase_ == phase::closed) return;
  if (!exchange_.is_sse) return send_reply({out.status, "application/json", std::move(out.bytes), {}});
  if (phase_ == phase::calling) {
    early_stream_ += out.bytes;  // the call is starting: its header is not queued yet
    return;
  }
  push_stream(out.bytes);
  if (!out.is_last) return;
  phase_ = phase::ending;
  if (exchange_.is_chunked) writer_.push(std::string(http_last_chunk));
  if (writer_.is_idle()) next_request();
}

void http_session::begin_stream() {
  exchange_.is_chunked = exchange_.version >= 11;
  if (!exchange_.is_chunked) exchange_.is_keep_alive = false;  // HTTP/1.0: the body ends when the connection closes
  phase_ = phase::streaming;
  writer_.push(sse_response_head(exchange_.version, exchange_.is_chunked, !exchange_.is_keep_alive || is_stopping_));
  push_stream(std::exchange(early_stream_, {}));
}

void http_session::push_stream(const std::string& bytes) {
  if (bytes.empty()) return;  // an empty chunk would end the body
  writer_.push(exchange_.is_chunked ? http_chunk(bytes) : bytes);
}

session_writer::handlers http_session::stream_handlers() {
  // Raw `this`: the writer runs these from handlers that hold the session.
  return {
      .write = [this](const std::string& bytes, session_writer::done_fn done) {
        net::async_write(stream_, net::buffer(bytes),
                         [done = std::move(done)](beast::error_code ec, std::size_t) { done(ec); });
      },
      // A reader slower than the engine: the stream pauses instead of the buffer growing,
      // and what it held joins the buffer as one chunk per choice once there is room.
      .on_pause = [this] { if (call_) call_->pause(); },
      .on_resume = [this] { if (call_ && call_->is_paused()) call_->resume(); },
      .on_drained = [this] { if (phase_ == phase::ending) next_request(); },
      .on_gone = [this] { client_gone(); },
  };
}

// --- disconnect detection ---------------------------------------------------------

void http_session::start_watch() {
  watch_.start(stream_,
               [self = shared_from_this()](beast::error_code ec, const std::string& bytes) { self->on_watch(ec, bytes); });
}

void http_session::on_watch(beast::error_code ec, const std::string& bytes) {
  if (phase_ == phase::closed) return;
  if (phase_ == phase::lingering) return ec ? close() : start_watch();  // drain and discard
  const bool is_busy = phase_ != phase::reading;
  if (!ec) {
    // A pipelined request: keep its bytes for the next read.
    auto dst = buffer_.prepare(bytes.size());
    net::buffer_copy(dst, net::buffer(bytes));
    buffer_.commit(bytes.size());
    if (is_busy) return start_watch();
    return do_read();
  }
  if (ec == net::error::operation_aborted && !is_busy) return do_read();
  client_gone();
}

void http_session::client_gone() {
  if (call_) call_->cancel();
  close();
}

void http_session::linger_close() {
  // Half-close, then drain what the client still sends (for up to server.linger_s) so
  // that it reads our answer instead of a reset (a 413 is sent before the body was read).
  if (phase_ == phase::closed || phase_ == phase::lingering) return;
  phase_ = phase::lingering;
  beast::error_code ignored;
  stream_.tcp().expires_never();
  stream_.tcp().socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  linger_timer_.expires_after(seconds_of(state_->settings().linger_s));
  linger_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->close();
  });
  if (!watch_.is_watching()) start_watch();
}

void http_session::close() {
  if (phase_ == phase::closed) return;
  phase_ = phase::closed;
  writer_.close();
  linger_timer_.cancel();
  beast::error_code ignored;
  stream_.tcp().socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.tcp().close();
}

}  // namespace inflight::gateway
