#include "actors/gateway/ws_session.hpp"

#include <chrono>

#include <boost/asio/post.hpp>

#include "actors/gateway/openai_request.hpp"
#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/posting_sink.hpp"
#include "actors/gateway/score_request.hpp"
#include "actors/gateway/ws_message.hpp"

namespace inflight::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using nlohmann::json;

namespace {

const char* ws_finish_reason(finish_reason r, bool is_aborting) {
  return r == finish_reason::cancelled && !is_aborting ? "cancelled" : api_name(r);
}

json timings_json(const request_timings& t) {
  return {{"queue_ms", t.queue_ms}, {"ttft_ms", t.ttft_ms}, {"tpot_ms", t.tpot_ms}, {"e2e_ms", t.e2e_ms}};
}

}  // namespace

ws_session::ws_session(net::ip::tcp::socket&& socket, gateway_state& state) : ws_(std::move(socket)), state_(state) {}

void ws_session::run(http::request<http::string_body> req) {
  websocket::stream_base::timeout timeout{};
  timeout.handshake_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(state_.settings().ws_handshake_timeout_s * 1e3));
  timeout.idle_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(state_.settings().idle_timeout_s * 1e3));
  timeout.keep_alive_pings = true;  // a ping at half the idle timeout; no pong in time closes
  ws_.set_option(timeout);
  ws_.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "inflight"); }));
  ws_.read_message_max(static_cast<std::uint64_t>(state_.settings().max_body_bytes));
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
    self->is_aborting_ = true;
    for (const auto& [key, live] : self->live_) self->cancel_live(live);
  });
}

void ws_session::on_accept(beast::error_code ec) {
  if (ec) return;
  is_open_ = true;
  do_read();
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

void ws_session::handle_generate(const ws_message& msg) {
  const json& id = msg.id;
  const std::string& key = msg.key;
  if (live_.contains(key))
    return send_error(id, bad_request("a request with this id is still running", "id", "duplicate_id"));
  if (is_stopping_ || state_.is_shutting_down())
    return send_error(id, shutting_down());
  auto parsed = try_parse_ws_generate(msg.body, state_.model());
  if (!parsed) return send_error(id, parsed.error());
  auto& req = parsed->request;
  live_request live{0, id, req.prompt.back(), parsed->has_logprobs, parsed->num_top_logprobs};
  auto ex = ws_.get_executor();
  auto self = shared_from_this();
  auto sink = std::make_shared<posting_sink>([ex](std::function<void()> task) { net::post(ex, std::move(task)); },
                                             [self, key](const token_event& ev) { self->on_token(key, ev); },
                                             [self, key](const finish_event& ev) { self->on_finish(key, ev); });
  // Registered before submit: the engine may call the sink at once (it posts, so the
  // handlers run after this function returns).
  auto engine_id = state_.eng().submit(std::move(req), std::move(sink));
  if (!engine_id) return send_error(id, to_api_error(engine_id.error()));
  live.engine_id = *engine_id;
  live_.emplace(key, std::move(live));
  state_.add_live_request();
}

template <class Call, class Request>
void ws_session::start_json_call(const ws_message& msg, Request request) {
  const std::string& key = msg.key;
  auto ex = ws_.get_executor();
  auto self = shared_from_this();
  auto call = std::make_shared<Call>(
      state_, std::move(request), [ex](std::function<void()> task) { net::post(ex, std::move(task)); },
      [self, key](api_result<json> out) { self->on_call_done(key, std::move(out)); });
  if (auto err = call->try_start()) return send_error(msg.id, *err);
  live_request live;
  live.id = msg.id;
  live.call = std::move(call);
  live_.emplace(key, std::move(live));
}

void ws_session::handle_rerank(const ws_message& msg) {
  if (live_.contains(msg.key))
    return send_error(msg.id, bad_request("a request with this id is still running", "id", "duplicate_id"));
  if (is_stopping_ || state_.is_shutting_down())
    return send_error(msg.id, shutting_down());
  auto parsed = try_parse_rerank(msg.body, state_.model());
  if (!parsed) return send_error(msg.id, parsed.error());
  start_json_call<score_call>(msg, std::move(*parsed));
}

void ws_session::handle_embed(const ws_message& msg) {
  if (live_.contains(msg.key))
    return send_error(msg.id, bad_request("a request with this id is still running", "id", "duplicate_id"));
  if (is_stopping_ || state_.is_shutting_down())
    return send_error(msg.id, shutting_down());
  auto parsed = try_parse_embeddings(msg.body, state_.model());
  if (!parsed) return send_error(msg.id, parsed.error());
  start_json_call<embed_call>(msg, std::move(*parsed));
}

void ws_session::on_call_done(const std::string& key, api_result<json> out) {
  auto it = live_.find(key);
  if (it == live_.end()) return;
  const json id = it->second.id;
  live_.erase(it);
  if (!out) {
    send_error(id, out.error());
  } else {
    json done = std::move(*out);
    done["type"] = "done";
    done["id"] = id;
    enqueue({"", false, std::move(done)});
  }
  maybe_close_after_stop();
}

void ws_session::cancel_live(const live_request& live) {
  if (live.call) return live.call->cancel();
  state_.eng().cancel(live.engine_id);
}

void ws_session::handle_cancel(const std::string& key) {
  // An id that is not running is ignored: it may have finished while the cancel was on its way.
  auto it = live_.find(key);
  if (it == live_.end()) return;
  cancel_live(it->second);
  if (!it->second.call) return;  // a generation's done follows from the engine
  // A rerank or embed ends now: its requests finish within a step, their results unused.
  const json id = it->second.id;
  live_.erase(it);
  enqueue({"", false, {{"type", "done"}, {"id", id}, {"finish_reason", "cancelled"}}});
  maybe_close_after_stop();
}

void ws_session::on_token(const std::string& key, const token_event& ev) {
  auto it = live_.find(key);
  if (it == live_.end()) return;
  auto& live = it->second;
  json body = {{"type", "token"}, {"id", live.id}, {"text", ev.text}, {"token_ids", ev.token_ids}, {"index", ev.index}};
  if (live.has_logprobs && !ev.logprobs.empty()) {
    body["logprobs"] = chat_logprobs_content(state_.model(), live.prev, ev.logprobs, live.num_top_logprobs);
  }
  if (!ev.token_ids.empty()) live.prev = ev.token_ids.back();
  enqueue({key, true, std::move(body)});
}

void ws_session::on_finish(const std::string& key, const finish_event& ev) {
  auto it = live_.find(key);
  if (it == live_.end()) return;
  const json id = it->second.id;
  live_.erase(it);
  state_.remove_live_request();
  if (!ev.text.empty()) {
    enqueue({key, true, {{"type", "token"}, {"id", id}, {"text", ev.text}, {"token_ids", json::array()},
                         {"index", ev.completion_tokens}}});
  }
  if (ev.reason == finish_reason::error) {
    send_error(id, finish_error(ev));
  } else {
    json done = {{"type", "done"}, {"id", id}, {"finish_reason", ws_finish_reason(ev.reason, is_aborting_)},
                 {"usage", usage_json(ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens)}, {"timings", timings_json(ev.timings)}};
    if (ev.cause) done["message"] = ev.cause->message;
    enqueue({"", false, std::move(done)});
  }
  maybe_close_after_stop();
}

void ws_session::send_error(const json& id, const api_error& e) {
  json msg = ws_error_message(id, e);
  // A load refusal, as HTTP's 429 + Retry-After: the socket stays open, retry later.
  if (e.status == 429) msg["retry_after_s"] = state_.settings().retry_after_s;
  enqueue({"", false, std::move(msg)});
}

void ws_session::enqueue(outgoing msg) {
  if (is_lost_ || !is_open_) return;
  const auto limit = static_cast<std::size_t>(std::max(1, state_.settings().ws_max_queued_messages));
  if (msg.is_token && queue_.size() >= limit) {
    // Full: merge into this request's last queued token message (not the one being written).
    const std::size_t first = is_writing_ ? 1 : 0;
    for (std::size_t i = queue_.size(); i-- > first;) {
      auto& q = queue_[i];
      if (!q.is_token || q.key != msg.key) continue;
      q.body["text"] = q.body["text"].get<std::string>() + msg.body["text"].get<std::string>();
      for (auto& t : msg.body["token_ids"]) q.body["token_ids"].push_back(t);
      if (msg.body.contains("logprobs")) {
        if (!q.body.contains("logprobs")) q.body["logprobs"] = json::array();
        for (auto& l : msg.body["logprobs"]) q.body["logprobs"].push_back(l);
      }
      return;
    }
  }
  queue_.push_back(std::move(msg));
  do_write();
}

void ws_session::do_write() {
  if (is_writing_ || queue_.empty() || is_lost_) return;
  is_writing_ = true;
  writing_ = dump_json(queue_.front().body);
  ws_.text(true);
  ws_.async_write(net::buffer(writing_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->on_write(ec);
  });
}

void ws_session::on_write(beast::error_code ec) {
  is_writing_ = false;
  if (ec) return connection_lost();
  queue_.pop_front();
  do_write();
  maybe_close_after_stop();
}

void ws_session::maybe_close_after_stop() {
  if (!is_stopping_ || is_closing_ || is_lost_ || !live_.empty() || is_writing_ || !queue_.empty()) return;
  is_closing_ = true;
  if (!is_open_) return;
  ws_.async_close(websocket::close_code::going_away, [self = shared_from_this()](beast::error_code) {
    self->is_lost_ = true;
  });
}

void ws_session::connection_lost() {
  if (is_lost_) return;
  is_lost_ = true;
  queue_.clear();
  // The client is gone: its requests are cancelled and free their KV blocks within a step.
  for (const auto& [key, live] : live_) cancel_live(live);
}

}  // namespace inflight::gateway
