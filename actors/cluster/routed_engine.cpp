#include "actors/cluster/routed_engine.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>

#include "actors/step_feed.hpp"
#include "core/engine/kv/block_hash.hpp"
#include "core/engine/metrics/prometheus_merge.hpp"

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
      generations_(options_.engines.size(), 0),
      is_draining_(options_.engines.size(), false),
      is_block_size_reported_(options_.engines.size(), false) {
  report_target_->owner = this;
  // One pass now, so that the engines already up take requests from the start.
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    auto remote = connect(static_cast<int>(i));
    if (remote) engines_[i] = std::move(*remote);
    router_.set_available(static_cast<int>(i), engines_[i] != nullptr);
  }
}

result<std::unique_ptr<remote_engine>> routed_engine::connect(int i) {
  const auto endpoint = try_parse_endpoint(options_.engines[static_cast<std::size_t>(i)]);
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    generation = ++generations_[static_cast<std::size_t>(i)];
  }
  auto on_report = [target = report_target_, i, generation](const engine_report& report) {
    std::lock_guard lock(target->mutex);
    if (target->owner != nullptr) target->owner->on_report(i, generation, report);
  };
  auto on_drain = [target = report_target_, i, generation] {
    std::lock_guard lock(target->mutex);
    if (target->owner != nullptr) target->owner->on_drain(i, generation);
  };
  return remote_engine::connect(net_, endpoint->first, endpoint->second, options_.timeout_s, std::move(on_report),
                                std::move(on_drain), options_.model);
}

void routed_engine::on_drain(int i, std::uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (generation != generations_[static_cast<std::size_t>(i)]) return;  // from a connection replaced since
  mark_draining(i);
}

void routed_engine::mark_draining(int i) {
  const auto k = static_cast<std::size_t>(i);
  router_.set_available(i, false);
  if (is_draining_[k]) return;
  is_draining_[k] = true;
  std::fprintf(stderr, "router: engine %s drains: no new requests go to it until it comes back\n",
               options_.engines[k].c_str());
}

void routed_engine::on_report(int i, std::uint64_t generation, const engine_report& report) {
  std::lock_guard lock(mutex_);
  const auto k = static_cast<std::size_t>(i);
  if (generation != generations_[k]) return;  // from a connection replaced since
  if (is_draining_[k]) return;  // out of the index until it comes back
  auto ok = router_.apply_report(i, report);
  if (ok || is_block_size_reported_[k]) return;
  is_block_size_reported_[k] = true;
  std::fprintf(stderr, "router: engine %s: %s\n", options_.engines[k].c_str(), ok.error().message.c_str());
}

routed_engine::~routed_engine() {
  {
    std::lock_guard lock(report_target_->mutex);
    report_target_->owner = nullptr;  // reports still arriving on actor threads go nowhere
  }
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
        router_.release(i, live->blocks);
        router_.set_available(i, false);
        continue;
      }
      if (remote->is_draining()) {  // said so before its word reached on_drain
        router_.release(i, live->blocks);
        mark_draining(i);
        continue;
      }
      live->engine = i;
    }
    auto id = remote->submit(live->request, std::make_shared<routing_sink>(this, live));
    std::lock_guard lock(mutex_);
    if (id) {
      live->remote_id = *id;
      if (live->is_cancelled) remote->cancel(*id);
      return true;
    }
    router_.release(i, live->blocks);
    live->engine = -1;
    if (id.error().code == errc::shutting_down) {
      // It began draining before its word reached this router: another engine takes it.
      mark_draining(i);
      continue;
    }
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
  // Its engine drained past its grace before this request started there.
  const bool engine_drained = ev.cause && ev.cause->code == errc::shutting_down;
  {
    std::lock_guard lock(mutex_);
    if (live->engine >= 0) router_.release(live->engine, live->blocks);
    if (engine_gone) router_.set_available(live->engine, false);
    if (engine_drained && live->engine >= 0) mark_draining(live->engine);
    const bool can_retry =
        (engine_gone || engine_drained) && !live->has_token && !live->is_cancelled && !is_stopping_;
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
  const int serving = num_serving();
  std::lock_guard lock(mutex_);
  h.is_stopped = is_stopping_;
  h.is_healthy = serving > 0 && !is_stopping_;
  if (up == 0) h.last_step_error = "no engine is reachable";
  else if (serving == 0) h.last_step_error = "every reachable engine is draining";
  return h;
}

int routed_engine::num_connected() const {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (const auto& e : engines_) n += e && e->is_connected() ? 1 : 0;
  return n;
}

int routed_engine::num_serving() const {
  std::lock_guard lock(mutex_);
  int n = 0;
  for (std::size_t i = 0; i < engines_.size(); ++i)
    n += engines_[i] && engines_[i]->is_connected() && !is_draining_[i] ? 1 : 0;
  return n;
}

bool routed_engine::is_draining(int i) const {
  std::lock_guard lock(mutex_);
  return is_draining_.at(static_cast<std::size_t>(i));
}

bool routed_engine::has_block_size_mismatch(int i) const {
  std::lock_guard lock(mutex_);
  return is_block_size_reported_.at(static_cast<std::size_t>(i));
}

std::uint64_t routed_engine::num_retried() const {
  std::lock_guard lock(mutex_);
  return num_retried_;
}

std::string routed_engine::render_metrics() const {
  std::vector<metrics_page> pages{{render_own_metrics(), "", ""}};
  std::vector<std::pair<std::string, std::shared_ptr<remote_engine>>> engines;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < engines_.size(); ++i) engines.emplace_back(options_.engines[i], engines_[i]);
  }
  // Each engine's own page under its address; one that does not answer is left out
  // (router_engine_up says which).
  for (const auto& [address, remote] : engines) {
    if (!remote || !remote->is_connected()) continue;
    auto text = remote->metrics_text(options_.metrics_timeout_s);
    if (text) pages.push_back({std::move(*text), "engine", address});
  }
  return merge_metrics_pages(pages);
}

std::string routed_engine::render_own_metrics() const {
  auto out = metrics_->render(model_.name, snapshot().gauges);
  std::lock_guard lock(mutex_);
  // Several models ([[models]]): a router per model, each of its samples under its name.
  const std::string model_label = options_.model.empty() ? "" : "model_name=\"" + options_.model + "\",";
  const auto per_engine = [&](const std::string& name, const std::string& type, const std::string& help,
                              const auto& value) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (std::size_t i = 0; i < engines_.size(); ++i)
      out += name + "{" + model_label + "engine=\"" + options_.engines[i] + "\"} " + std::to_string(value(i)) + "\n";
  };
  per_engine("inflight:router_engine_up", "gauge", "Whether the router reaches the engine.", [&](std::size_t i) {
    return engines_[i] && engines_[i]->is_connected() ? 1 : 0;
  });
  per_engine("inflight:router_engine_draining", "gauge",
             "Whether the engine said it drains (it takes no new requests; it rejoins when it comes back).",
             [&](std::size_t i) { return is_draining_[i] ? 1 : 0; });
  per_engine("inflight:router_engine_connects_total", "counter",
             "Connections the router opened or tried to open to each engine (growing: the engine was lost).",
             [&](std::size_t i) { return generations_[i]; });
  per_engine("inflight:router_requests_routed_total", "counter", "Requests sent to each engine.",
             [&](std::size_t i) { return router_.num_routed(static_cast<int>(i)); });
  per_engine("inflight:router_indexed_blocks", "gauge",
             "KV blocks the router's prefix index holds for each engine (from the engine's reports).",
             [&](std::size_t i) { return router_.num_indexed_blocks(static_cast<int>(i)); });
  out += "# HELP inflight:router_requests_retried_total Requests sent again after their engine went away or "
         "drained.\n";
  out += "# TYPE inflight:router_requests_retried_total counter\n";
  out += "inflight:router_requests_retried_total" +
         (model_label.empty() ? std::string() : "{" + model_label.substr(0, model_label.size() - 1) + "}") + " " +
         std::to_string(num_retried_) + "\n";
  return out;
}

void routed_engine::watch_steps(std::size_t i, const std::shared_ptr<step_sink>& sink) {
  if (!engines_[i]) return;
  if (!sink) return engines_[i]->set_step_handler({});
  engines_[i]->set_step_handler([sink, address = options_.engines[i]](const step_summary& step) {
    step_summary named = step;
    named.engine = address;
    sink->on_step(named);
  });
}

void routed_engine::set_step_sink(std::shared_ptr<step_sink> sink) {
  std::lock_guard lock(mutex_);
  step_sink_ = std::move(sink);
  for (std::size_t i = 0; i < engines_.size(); ++i) watch_steps(i, step_sink_);
}

bool routed_engine::has_step_sink() const {
  std::lock_guard lock(mutex_);
  return step_sink_ != nullptr;
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
        // Gone, or not up yet: nothing goes to it, and its blocks leave the index.
        router_.set_available(static_cast<int>(i), false);
      }
      auto remote = connect(static_cast<int>(i));
      if (!remote) continue;
      std::lock_guard lock(mutex_);
      engines_[i] = std::move(*remote);
      // A new process on its address (a drained engine restarted): it takes requests again.
      if (is_draining_[i]) {
        is_draining_[i] = false;
        std::fprintf(stderr, "router: engine %s is back\n", options_.engines[i].c_str());
      }
      if (step_sink_) watch_steps(i, step_sink_);  // a page watches: this engine's steps too
      router_.set_load(static_cast<int>(i), {});  // until its first report
      router_.set_available(static_cast<int>(i), true);
    }
  }
}

}  // namespace inflight
