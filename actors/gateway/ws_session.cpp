#include "actors/gateway/ws_session.hpp"

#include <chrono>

#include <boost/asio/post.hpp>

#include "actors/gateway/api_keys.hpp"
#include "actors/gateway/completion_call.hpp"
#include "actors/gateway/score_request.hpp"
#include "actors/gateway/ws_message.hpp"

namespace inflight::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using nlohmann::json;

ws_session::ws_session(edge_stream&& stream, model_table& models)
    : ws_(std::move(stream)),
      models_(models),
      state_(models.first()),
      writer_(ws_.get_executor(),
              {std::size_t(std::max<std::int64_t>(1, models.first().settings().max_stream_buffer_bytes)),
               std::size_t(std::max(1, models.first().settings().ws_max_queued_messages)), 0.0, false}) {}

void ws_session::run(http::request<http::string_body> req) {
  websocket::stream_base::timeout timeout{};
  timeout.handshake_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(state_.settings().ws_handshake_timeout_s * 1e3));
  timeout.idle_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(state_.settings().idle_timeout_s * 1e3));
  timeout.keep_alive_pings = true;  // a ping at half the idle timeout; no pong in time closes
  ws_.set_option(timeout);
  // A client that offers the `inflight` subprotocol (the web UI, which also carries its
  // key in one) gets it back: a browser fails a handshake that answers none of its offers.
  const auto offered = req.find(http::field::sec_websocket_protocol);
  const bool echo_protocol =
      offered != req.end() && offers_ws_protocol(std::string_view(offered->value().data(), offered->value().size()));
  ws_.set_option(websocket::stream_base::decorator([echo_protocol](websocket::response_type& res) {
    res.set(http::field::server, "inflight");
    if (echo_protocol) res.set(http::field::sec_websocket_protocol, std::string(ws_protocol));
  }));
  ws_.read_message_max(static_cast<std::uint64_t>(state_.settings().max_body_bytes));
  writer_.start(weak_from_this(), write_handlers());
  state_.add_session(shared_from_this());
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) { self->on_accept(ec); });
}

void ws_session::stop() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    self->is_stopping_ = true;
    self->maybe_close_after_stop();
  });
}

void ws_session::abort_requests() {
  net::post(ws_.get_executor(), [self = shared_from_this()] {
    for (const auto& [key, live] : self->live_) live.call->abort();  // generations end with "abort"
  });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) {
    phase_ = phase::lost;
    return writer_.close();
  }
  phase_ = phase::open;
  do_read();
  maybe_close_after_stop();  // stopped while the upgrade was answered
}

void ws_session::do_read() {
  ws_.async_read(read_buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void ws_session::on_read(beast::error_code ec) {
  if (ec) return connection_lost();
  const std::string text = beast::buffers_to_string(read_buffer_.data());
  read_buffer_.consume(read_buffer_.size());
  auto msg = try_parse_ws_message(text, ws_.got_text());
  if (!msg) {
    send_error(msg.error().id, msg.error().error);
  } else if (msg->type == ws_message_type::generate) {
    handle_generate(*msg);
  } else if (msg->type == ws_message_type::rerank) {
    handle_rerank(*msg);
  } else if (msg->type == ws_message_type::embed) {
    handle_embed(*msg);
  } else {
    handle_cancel(msg->key);
  }
  do_read();
}

std::optional<api_error> ws_session::check_new(const ws_message& msg) const {
  if (live_.contains(msg.key)) return bad_request("a request with this id is still running", "id", "duplicate_id");
  if (is_stopping_ || state_.is_shutting_down()) return shutting_down();
  return std::nullopt;
}

void ws_session::handle_generate(const ws_message& msg) {
  if (auto e = check_new(msg)) return send_error(msg.id, *e);
  auto chosen = models_.for_json(msg.body);
  if (!chosen) return send_error(msg.id, chosen.error());
  gateway_state& state = **chosen;
  auto parsed = try_parse_ws_generate(msg.body, state.model(), msg.ordered_body);
  if (!parsed) return send_error(msg.id, parsed.error());
  auto ex = ws_.get_executor();
  const std::uint64_t serial = next_serial_++;
  auto call = std::make_shared<completion_call>(
      state, std::move(*parsed), [ex](std::function<void()> task) { net::post(ex, std::move(task)); },
      [self = shared_from_this(), key = msg.key, serial](call_output out) {
        self->on_generation_output(key, serial, std::move(out));
      },
      msg.id);
  // The call's events are posted: they run after it is registered here.
  if (auto err = call->try_start()) return send_error(msg.id, *err);
  if (writer_.is_paused()) call->pause();
  live_.emplace(msg.key, live_request{msg.id, std::move(call), true, serial});
}

template <class Call, class Request>
void ws_session::start_json_call(gateway_state& state, const ws_message& msg, Request request) {
  const std::string& key = msg.key;
  auto ex = ws_.get_executor();
  auto self = shared_from_this();
  const std::uint64_t serial = next_serial_++;
  auto call = std::make_shared<Call>(
      state, std::move(request), [ex](std::function<void()> task) { net::post(ex, std::move(task)); },
      [self, key, serial](api_result<json> out) { self->on_call_done(key, serial, std::move(out)); });
  if (auto err = call->try_start()) return send_error(msg.id, *err);
  live_.emplace(key, live_request{msg.id, std::move(call), false, serial});
}

void ws_session::handle_rerank(const ws_message& msg) {
  if (auto e = check_new(msg)) return send_error(msg.id, *e);
  auto chosen = models_.for_json(msg.body);
  if (!chosen) return send_error(msg.id, chosen.error());
  auto parsed = try_parse_rerank(msg.body, (*chosen)->model());
  if (!parsed) return send_error(msg.id, parsed.error());
  start_json_call<score_call>(**chosen, msg, std::move(*parsed));
}

void ws_session::handle_embed(const ws_message& msg) {
  if (auto e = check_new(msg)) return send_error(msg.id, *e);
  auto chosen = models_.for_json(msg.body);
  if (!chosen) return send_error(msg.id, chosen.error());
  auto parsed = try_parse_embeddings(msg.body, (*chosen)->model());
  if (!parsed) return send_error(msg.id, parsed.error());
  start_json_call<embed_call>(**chosen, msg, std::move(*parsed));
}

ws_session::live_request* ws_session::find_live(const std::string& key, std::uint64_t serial) {
  auto it = live_.find(key);
  return it == live_.end() || it->second.serial != serial ? nullptr : &it->second;
}

void ws_session::on_generation_output(const std::string& key, std::uint64_t serial, call_output out) {
  if (find_live(key, serial) == nullptr) return;
  if (phase_ == phase::open) writer_.push(std::move(out.bytes));
  if (out.is_last) end_live(key);
}

void ws_session::on_call_done(const std::string& key, std::uint64_t serial, api_result<json> out) {
  const auto* live = find_live(key, serial);
  if (live == nullptr) return;
  const json id = live->id;
  if (!out) {
    send_error(id, out.error());
  } else {
    json done = std::move(*out);
    done["type"] = "done";
    done["id"] = id;
    send(done);
  }
  end_live(key);
}

void ws_session::handle_cancel(const std::string& key) {
  // An id that is not running is ignored: it may have finished while the cancel was on its way.
  auto it = live_.find(key);
  if (it == live_.end()) return;
  it->second.call->cancel();
  if (it->second.is_generation) return;  // its done follows from the engine
  // A rerank or embed ends now: its requests finish within a step, their results unused.
  send({{"type", "done"}, {"id", it->second.id}, {"finish_reason", finish_name(finish_reason::cancelled)}});
  end_live(key);
}

void ws_session::end_live(const std::string& key) {
  live_.erase(key);
  maybe_close_after_stop();
}

void ws_session::send_error(const json& id, const api_error& e) {
  send(ws_error_message(id, e, state_.settings().retry_after_s));
}

void ws_session::send(const json& msg) {
  if (phase_ == phase::open) writer_.push(dump_json(msg));
}

session_writer::handlers ws_session::write_handlers() {
  // Raw `this`: the writer runs these from handlers that hold the session.
  return {
      .write = [this](const std::string& bytes, session_writer::done_fn done) {
        ws_.text(true);
        ws_.async_write(net::buffer(bytes), [done = std::move(done)](beast::error_code ec, std::size_t) { done(ec); });
      },
      .on_pause = [this] { for (auto& [key, live] : live_) live.call->pause(); },
      .on_resume = [this] {
        // What a call held fills the queue again: once it is full, the rest wait their turn.
        for (auto& [key, live] : live_) {
          if (writer_.is_paused()) break;
          if (live.call->is_paused()) live.call->resume();
        }
      },
      .on_drained = [this] { maybe_close_after_stop(); },
      .on_gone = [this] { connection_lost(); },
  };
}

void ws_session::maybe_close_after_stop() {
  if (!is_stopping_ || phase_ != phase::open || !live_.empty() || !writer_.is_idle()) return;
  phase_ = phase::closing;
  ws_.async_close(websocket::close_code::going_away, [self = shared_from_this()](beast::error_code) {
    self->phase_ = phase::lost;
    self->writer_.close();
  });
}

void ws_session::connection_lost() {
  if (phase_ == phase::lost) return;
  phase_ = phase::lost;
  writer_.close();
  // The client is gone: its requests are cancelled and free their KV blocks within a step.
  for (const auto& [key, live] : live_) live.call->cancel();
}

}  // namespace inflight::gateway
