#include "actors/models/model_pool.hpp"

#include <algorithm>
#include <cstdio>

#include "actors/engine/engine.hpp"

namespace inflight {

namespace {

result<std::shared_ptr<engine_api>> start_engine(const deployment& d, loaded_model model,
                                                 std::shared_ptr<engine_metrics> metrics) {
  auto eng = engine::start(d, std::move(model), std::move(metrics));
  if (!eng) return std::unexpected(eng.error());
  return std::shared_ptr<engine_api>(std::move(*eng));
}

/// What the gateway needs of a model that is not loaded now: the bytes stay on disk.
result<loaded_model> probe_model(const deployment& d) {
  model_settings s = d.model;
  if (s.load_mode == "auto") s.load_mode = "mmap";
  return load_model(s, d.engine.backend);
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / 1048576.0);
  return buf;
}

std::int64_t size_of(const deployment& d, const loaded_model& m) {
  return m.weights ? weight_bytes(*m.weights) + kv_cache_bytes(d, m.weights->config) : 0;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

model_pool::~model_pool() {
  shutdown(0.0);
  slots_.clear();
}

result<model_slot*> model_pool::add(const deployment& d, double keep_alive_s, bool load_now) {
  model_slot::hooks hooks{[this](model_slot& s) { wants_load(s); }, [this] { notify(); }};
  int num_loaded = 0;
  std::int64_t loaded_bytes = 0;
  for (const auto& s : slots_) {
    if (s->state() != model_state::loaded) continue;
    ++num_loaded;
    loaded_bytes += s->size_bytes();
  }
  const bool has_room = limits_.max_loaded_models == 0 || num_loaded < limits_.max_loaded_models;
  load_now = load_now && keep_alive_s != 0.0;  // it would unload at once
  auto model = load_now && has_room ? load_model(d.model, d.engine.backend) : probe_model(d);
  if (!model) return std::unexpected(model.error());
  const auto size = size_of(d, *model);
  auto slot = std::make_unique<model_slot>(d, *model, keep_alive_s, hooks);
  slot->set_estimate(size);
  const bool fits = limits_.memory_budget_bytes == 0 || loaded_bytes + size <= limits_.memory_budget_bytes;
  if (load_now && has_room && fits) {
    auto eng = start_engine(d, std::move(*model), slot->shared_metrics());
    if (!eng) return std::unexpected(eng.error());
    slot->try_begin_load();
    slot->attach(std::move(*eng), size);
  }
  slots_.push_back(std::move(slot));
  return slots_.back().get();
}

void model_pool::start() { thread_ = std::thread([this] { run(); }); }

model_slot* model_pool::find(std::string_view name) const {
  for (const auto& s : slots_)
    if (s->name() == name) return s.get();
  return nullptr;
}

model_status model_pool::status(std::string_view name) const {
  if (auto* s = find(name)) return s->status();
  return {};
}

void model_pool::load(std::string_view name, done_fn done) {
  auto* s = find(name);
  if (s == nullptr) return done(make_error(errc::not_found, "no model `" + std::string(name) + "`"));
  {
    std::lock_guard lock(mutex_);
    if (!is_stopping_) {
      jobs_.push_back({true, s, {std::move(done)}});
      wake_.notify_all();
      return;
    }
  }
  done(make_error(errc::shutting_down, "the server is shutting down"));
}

void model_pool::unload(std::string_view name, done_fn done) {
  auto* s = find(name);
  if (s == nullptr) return done(make_error(errc::not_found, "no model `" + std::string(name) + "`"));
  {
    std::lock_guard lock(mutex_);
    if (!is_stopping_) {
      jobs_.push_back({false, s, {std::move(done)}});
      wake_.notify_all();
      return;
    }
  }
  done(make_error(errc::shutting_down, "the server is shutting down"));
}

void model_pool::set_keep_alive(std::string_view name, double seconds) {
  if (auto* s = find(name)) s->set_keep_alive(seconds);
  notify();
}

void model_pool::wants_load(model_slot& slot) {
  std::lock_guard lock(mutex_);
  if (is_stopping_) return;
  for (const auto& j : jobs_)
    if (j.is_load && j.slot == &slot) return;
  jobs_.push_back({true, &slot, {}});
  wake_.notify_all();
}

void model_pool::notify() {
  std::lock_guard lock(mutex_);
  wake_.notify_all();
}

result<model_slot*> model_pool::victim_for(const model_slot& slot) const {
  const std::int64_t need = slot.size_bytes();
  if (limits_.memory_budget_bytes > 0 && need > limits_.memory_budget_bytes) {
    return make_error(errc::unavailable, "it needs about " + mib(need) + " (weights and KV cache), more than " +
                                             "server.memory_budget (" + mib(limits_.memory_budget_bytes) + ")");
  }
  int num_loaded = 0;
  std::int64_t loaded_bytes = 0;
  model_slot* oldest_idle = nullptr;
  for (const auto& s : slots_) {
    if (s.get() == &slot || s->state() != model_state::loaded) continue;
    ++num_loaded;
    loaded_bytes += s->size_bytes();
    if (s->is_idle() && (oldest_idle == nullptr || s->last_used() < oldest_idle->last_used())) oldest_idle = s.get();
  }
  const bool fits = (limits_.max_loaded_models == 0 || num_loaded < limits_.max_loaded_models) &&
                    (limits_.memory_budget_bytes == 0 || loaded_bytes + need <= limits_.memory_budget_bytes);
  if (fits) return static_cast<model_slot*>(nullptr);
  if (oldest_idle == nullptr) return const_cast<model_slot*>(&slot);  // wait: the room is busy
  return oldest_idle;
}

bool model_pool::try_load(model_slot& slot, result<void>& outcome) {
  outcome = {};
  if (slot.state() == model_state::loaded) return true;
  for (;;) {
    auto victim = victim_for(slot);
    if (!victim) {
      std::printf("inflight: model %s cannot be loaded: %s\n", slot.name().c_str(), victim.error().message.c_str());
      std::fflush(stdout);
      slot.fail_load(victim.error());
      outcome = make_error(errc::unavailable, "model `" + slot.name() + "` cannot be loaded: " + victim.error().message);
      return true;
    }
    if (*victim == nullptr) break;
    if (*victim == &slot) return false;
    unload_now(**victim);
  }
  if (!slot.try_begin_load()) {
    if (slot.state() != model_state::loaded) outcome = make_error(errc::shutting_down, "the server is shutting down");
    return true;
  }
  const auto start = std::chrono::steady_clock::now();
  auto model = load_model(slot.settings().model, slot.settings().engine.backend);
  result<std::shared_ptr<engine_api>> eng = std::unexpected(model ? error{} : model.error());
  std::int64_t size = 0;
  if (model) {
    size = size_of(slot.settings(), *model);
    eng = start_engine(slot.settings(), std::move(*model), slot.shared_metrics());
  }
  if (!eng) {
    std::printf("inflight: model %s failed to load: %s\n", slot.name().c_str(), eng.error().message.c_str());
    std::fflush(stdout);
    slot.fail_load(eng.error());
    outcome = make_error(errc::unavailable, "model `" + slot.name() + "` could not be loaded: " + eng.error().message);
    return true;
  }
  if (!slot.attach(*eng, size)) {
    (*eng)->shutdown(0.0);
    outcome = make_error(errc::shutting_down, "the server is shutting down");
    return true;
  }
  std::printf("inflight: model %s loaded (%s) in %.2f s\n", slot.name().c_str(), mib(size).c_str(),
              seconds_since(start));
  std::fflush(stdout);
  return true;
}

void model_pool::unload_now(model_slot& slot) {
  auto eng = slot.detach_if_idle();
  if (!eng) return;
  eng->shutdown(0.0);
  eng.reset();
  std::printf("inflight: model %s unloaded\n", slot.name().c_str());
  std::fflush(stdout);
}

void model_pool::expire_idle() {
  for (const auto& s : slots_) {
    if (s->state() != model_state::loaded || !s->is_idle()) continue;
    const double keep = s->keep_alive_s();
    if (keep >= 0 && seconds_since(s->last_used()) >= keep) unload_now(*s);
  }
}

void model_pool::run() {
  std::deque<job> deferred;  // loads that wait for room, unloads that wait for requests to finish
  for (;;) {
    std::deque<job> todo;
    {
      std::unique_lock lock(mutex_);
      if (jobs_.empty() && !is_stopping_) wake_.wait_for(lock, std::chrono::milliseconds(100));
      if (is_stopping_) break;
      todo.swap(jobs_);
    }
    todo.insert(todo.begin(), std::make_move_iterator(deferred.begin()), std::make_move_iterator(deferred.end()));
    deferred.clear();
    for (auto& j : todo) {
      result<void> outcome;
      bool is_done = true;
      if (j.is_load) {
        // A load that only requests wanted waits no longer once they are gone (cancelled).
        if (j.done.empty() && !j.slot->has_waiting() && j.slot->state() != model_state::loaded) continue;
        is_done = try_load(*j.slot, outcome);
      } else {
        unload_now(*j.slot);
        is_done = j.slot->state() != model_state::loaded;
      }
      if (!is_done) {
        auto same = std::find_if(deferred.begin(), deferred.end(),
                                 [&](const job& d) { return d.is_load == j.is_load && d.slot == j.slot; });
        if (same == deferred.end()) {
          deferred.push_back(std::move(j));
        } else {
          for (auto& d : j.done) same->done.push_back(std::move(d));
        }
        continue;
      }
      for (auto& d : j.done) d(outcome);
    }
    expire_idle();
  }
  for (auto& j : deferred)
    for (auto& d : j.done) d(make_error(errc::shutting_down, "the server is shutting down"));
}

void model_pool::shutdown(double grace_s) {
  std::deque<job> left;
  {
    std::lock_guard lock(mutex_);
    if (is_shut_down_) return;
    is_shut_down_ = true;
    is_stopping_ = true;
    left.swap(jobs_);
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  for (auto& j : left)
    for (auto& d : j.done) d(make_error(errc::shutting_down, "the server is shutting down"));
  for (const auto& s : slots_) s->shutdown(grace_s);
}

}  // namespace inflight
