#include "actors/routed_engine.hpp"

#include <charconv>
#include <chrono>

#include "core/kv/block_hash.hpp"

namespace inflight {

struct routed_engine::live_request {
  request_id id = 0;
  generate_request request;  ///< kept for a retry on another engine
  std::shared_ptr<request_sink> client;
  std::vector<block_hash> blocks;
  int engine = -1;
  std::optional<request_id> remote_id;
  std::atomic<bool> has_token{false};
  bool is_cancelled = false;
};

/// Between an engine's events and the client's sink: notes the first token (after it,
/// no retry) and hands the finish to the router.
class routed_engine::routing_sink final : public request_sink {
 public:
  routing_sink(routed_engine* owner, std::shared_ptr<live_request> live) : owner_(owner), live_(std::move(live)) {}
  void on_token(const token_event& ev) override {
    live_->has_token = true;
    live_->client->on_token(ev);
  }
  void on_finish(const finish_event& ev) override { owner_->on_finished(live_, ev); }

 private:
  routed_engine* owner_;
  std::shared_ptr<live_request> live_;
};

result<std::pair<std::string, std::uint16_t>> try_parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return make_error(errc::invalid_argument, "engine address '" + text + "': expected host:port");
  unsigned port = 0;
  const auto digits = std::string_view(text).substr(colon + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535)
    return make_error(errc::invalid_argument, "engine address '" + text + "': the port must be 1 to 65535");
  return std::pair{text.substr(0, colon), static_cast<std::uint16_t>(port)};
}

result<std::unique_ptr<routed_engine>> routed_engine::start(const deployment& d, loaded_model model,
                                                            caf::actor_system& net, router_options options) {
  if (options.engines.empty()) return make_error(errc::invalid_argument, "a router needs at least one engine");
  for (const auto& e : options.engines)
    if (auto ok = try_parse_endpoint(e); !ok) return std::unexpected(ok.error());
  auto policy = route_policy::try_load(options.plugin_dir, options.policy, options.policy_settings);
  if (!policy) return std::unexpected(policy.error());
  auto r = std::unique_ptr<routed_engine>(
      new routed_engine(d, std::move(model), net, std::move(options), std::move(*policy)));
  r->reconnector_ = std::thread([p = r.get()] { p->reconnect_loop(); });
  r->worker_ = std::thread([p = r.get()] { p->worker_loop(); });
  return r;
}

routed_engine::routed_engine(const deployment& d, loaded_model model, caf::actor_system& net, router_options options,
                             route_policy policy)
    : settings_(d),
      model_(std::move(model)),
      net_(net),
      options_(std::move(options)),
      metrics_(std::make_unique<engine_metrics>()),
      router_(std::move(policy), static_cast<int>(options_.engines.size()), d.engine.block_size),
      engines_(options_.engines.size()),
      num_in_flight_(options_.engines.size(), 0) {
  // One pass now, so that the engines already up take requests from the start.
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    const auto endpoint = try_parse_endpoint(options_.engines[i]);
    auto remote = remote_engine::connect(net_, endpoint->first, endpoint->second, options_.timeout_s);
    if (remote) engines_[i] = std::move(*remote);
    router_.set_available(static_cast<int>(i), engines_[i] != nullptr);
  }
}

routed_engine::~routed_engine() {
  {
    std::lock_guard lock(jobs_mutex_);
    is_closing_ = true;
  }
  jobs_changed_.notify_all();
  if (reconnector_.joinable()) reconnector_.join();
  if (worker_.joinable()) worker_.join();
  std::vector<std::shared_ptr<remote_engine>> engines;
  {
    std::lock_guard lock(mutex_);
    engines.swap(engines_);
  }
  engines.clear();  // their clients end what still runs with an error ...
  // ... through routing sinks that point here: wait for the last of them.
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, std::chrono::seconds(10), [&] { return live_.empty(); });
}

result<request_id> routed_engine::submit(generate_request request, std::shared_ptr<request_sink> sink) {
  auto live = std::make_shared<live_request>();
  extend_block_hashes(live->blocks, request.prompt, router_.block_size(), request.cache_salt);
  live->request = std::move(request);
  live->client = std::move(sink);
  {
    std::lock_guard lock(mutex_);
    if (is_stopping_) return make_error(errc::shutting_down, "the router is shutting down");
    live->id = next_id_++;
    live_[live->id] = live;
  }
  error failure;
  if (!dispatch(live, failure)) {
    std::lock_guard lock(mutex_);
    live_.erase(live->id);
    changed_.notify_all();
    return std::unexpected(failure);
  }
  return live->id;
}

bool routed_engine::dispatch(const std::shared_ptr<live_request>& live, error& failure) {
  for (std::size_t attempt = 0; attempt <= engines_.size(); ++attempt) {
    std::shared_ptr<remote_engine> remote;
    int i = -1;
    {
      std::lock_guard lock(mutex_);
      auto chosen = router_.choose(live->blocks, static_cast<int>(live->request.prompt.size()));
      if (!chosen) {
        failure = error{errc::unavailable, "no engine is available: " + chosen.error().message};
        return false;
      }
      i = *chosen;
      remote = engines_[static_cast<std::size_t>(i)];
      if (!remote || !remote->is_connected()) {  // gone: the reconnect loop brings it back
        router_.set_available(i, false);
        continue;
      }
      live->engine = i;
      ++num_in_flight_[static_cast<std::size_t>(i)];
      router_.set_load(i, {num_in_flight_[static_cast<std::size_t>(i)], 0, 0, 0});
    }
    auto id = remote->submit(live->request, std::make_shared<routing_sink>(this, live));
    std::lock_guard lock(mutex_);
    if (id) {
      live->remote_id = *id;
      if (live->is_cancelled) remote->cancel(*id);
      return true;
    }
    --num_in_flight_[static_cast<std::size_t>(i)];
    router_.set_load(i, {num_in_flight_[static_cast<std::size_t>(i)], 0, 0, 0});
    if (id.error().code != errc::unavailable) {
      failure = id.error();
      return false;
    }
    // No answer: drop the connection (the reconnect loop makes a new one) and try another.
    engines_[static_cast<std::size_t>(i)].reset();
    router_.set_available(i, false);
  }
  failure = error{errc::unavailable, "no engine took the request"};
  return false;
}

void routed_engine::on_finished(const std::shared_ptr<live_request>& live, const finish_event& ev) {
  const bool engine_gone = ev.reason == finish_reason::error && ev.cause && ev.cause->code == errc::unavailable;
  {
    std::lock_guard lock(mutex_);
    if (live->engine >= 0) {
      auto& n = num_in_flight_[static_cast<std::size_t>(live->engine)];
      n = std::max(0, n - 1);
      router_.set_load(live->engine, {n, 0, 0, 0});
    }
    if (engine_gone) router_.set_available(live->engine, false);
    const bool can_retry = engine_gone && !live->has_token && !live->is_cancelled && !is_stopping_;
    if (can_retry && post([this, live, ev] {
        error failure;
        if (dispatch(live, failure)) return;
        {
          std::lock_guard lock(mutex_);
          live_.erase(live->id);
          changed_.notify_all();
        }
        live->client->on_finish(ev);
      })) {
      ++num_retried_;
      return;
    }
    live_.erase(live->id);
    changed_.notify_all();
  }
  live->client->on_finish(ev);
}

void routed_engine::cancel(request_id id) {
  std::shared_ptr<remote_engine> remote;
  std::optional<request_id> remote_id;
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(id);
    if (it == live_.end()) return;
    it->second->is_cancelled = true;
    if (it->second->engine >= 0) remote = engines_[static_cast<std::size_t>(it->second->engine)];
    remote_id = it->second->remote_id;
  }
  if (remote && remote_id) remote->cancel(*remote_id);
}

engine_snapshot routed_engine::snapshot() const {
  std::lock_guard lock(mutex_);
  engine_snapshot s;
  s.gauges.num_requests_running = static_cast<int>(live_.size());
  s.is_idle = live_.empty();
  return s;
}

engine_health routed_engine::health() const {
  engine_health h;
  const int up = num_connected();
  std::lock_guard lock(mutex_);
  h.is_stopped = is_stopping_;
  h.is_healthy = up > 0 && !is_stopping_;
  if (up == 0) h.last_step_error = "no engine is reachable";
  return h;
}

int routed_engine::num_connected() const {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (const auto& e : engines_) n += e && e->is_connected() ? 1 : 0;
  return n;
}

std::uint64_t routed_engine::num_retried() const {
  std::lock_guard lock(mutex_);
  return num_retried_;
}

std::string routed_engine::render_metrics() const {
  auto out = metrics_->render(model_.name, snapshot().gauges);
  std::lock_guard lock(mutex_);
  out += "# HELP inflight:router_engine_up Whether the router reaches the engine.\n";
  out += "# TYPE inflight:router_engine_up gauge\n";
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    const bool up = engines_[i] && engines_[i]->is_connected();
    out += "inflight:router_engine_up{engine=\"" + options_.engines[i] + "\"} " + (up ? "1" : "0") + "\n";
  }
  out += "# HELP inflight:router_requests_routed_total Requests sent to each engine.\n";
  out += "# TYPE inflight:router_requests_routed_total counter\n";
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    out += "inflight:router_requests_routed_total{engine=\"" + options_.engines[i] + "\"} " +
           std::to_string(router_.num_routed(static_cast<int>(i))) + "\n";
  }
  out += "# HELP inflight:router_requests_retried_total Requests sent again after their engine went away.\n";
  out += "# TYPE inflight:router_requests_retried_total counter\n";
  out += "inflight:router_requests_retried_total " + std::to_string(num_retried_) + "\n";
  return out;
}

void routed_engine::shutdown(double grace_s) {
  std::unique_lock lock(mutex_);
  is_stopping_ = true;
  changed_.wait_for(lock, std::chrono::duration<double>(grace_s), [&] { return live_.empty(); });
  std::vector<request_id> left;
  for (const auto& [id, live] : live_) left.push_back(id);
  lock.unlock();
  for (auto id : left) cancel(id);
  lock.lock();
  changed_.wait_for(lock, std::chrono::seconds(5), [&] { return live_.empty(); });
}

bool routed_engine::post(std::function<void()> job) {
  {
    std::lock_guard lock(jobs_mutex_);
    if (is_closing_) return false;
    jobs_.push_back(std::move(job));
  }
  jobs_changed_.notify_all();
  return true;
}

void routed_engine::worker_loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(jobs_mutex_);
      jobs_changed_.wait(lock, [&] { return is_closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

void routed_engine::reconnect_loop() {
  for (;;) {
    {
      std::unique_lock lock(jobs_mutex_);
      jobs_changed_.wait_for(lock, std::chrono::duration<double>(options_.reconnect_interval_s),
                             [&] { return is_closing_; });
      if (is_closing_) return;
    }
    for (std::size_t i = 0; i < options_.engines.size(); ++i) {
      {
        std::lock_guard lock(mutex_);
        if (engines_[i] && engines_[i]->is_connected()) continue;
      }
      const auto endpoint = try_parse_endpoint(options_.engines[i]);
      auto remote = remote_engine::connect(net_, endpoint->first, endpoint->second, options_.timeout_s);
      if (!remote) continue;
      std::lock_guard lock(mutex_);
      engines_[i] = std::move(*remote);
      num_in_flight_[i] = 0;
      router_.set_load(static_cast<int>(i), {});
      router_.set_available(static_cast<int>(i), true);
    }
  }
}

}  // namespace inflight
