#include "actors/models/model_slot.hpp"

#include "core/engine/kv/block_pool.hpp"

namespace inflight {

std::int64_t weight_bytes(const model_weights& w) {
  const auto vec = [](const std::vector<float>& v) { return std::int64_t(v.size() * sizeof(float)); };
  std::int64_t total = std::int64_t(w.token_embedding.bytes().size() + w.classifier.bytes().size()) + vec(w.final_norm);
  for (const auto& l : w.layers) {
    for (const auto* m : matrices_of(l)) total += std::int64_t(m->bytes().size());
    for (const auto* v : {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm, &l.ffn_norm, &l.post_attn_norm,
                          &l.post_ffn_norm, &l.shared_expert_gate, &l.attn_sinks, &l.bo, &l.router_bias,
                          &l.gate_exps_bias, &l.up_exps_bias, &l.down_exps_bias})
      total += vec(*v);
  }
  return total;
}

std::int64_t kv_cache_bytes(const deployment& d, const model_config& c) {
  const auto& e = d.engine;
  const bool is_half = e.kv_dtype == "f16" || e.kv_dtype == "bf16" || (e.kv_dtype == "auto" && e.backend == "cuda");
  const auto per_token = kv_bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, is_half ? 2 : 4);
  if (e.kv_blocks > 0) return std::int64_t(e.kv_blocks) * e.block_size * per_token;
  return e.kv_memory_bytes;
}

/// Counts the request out of the slot when it finishes.
struct model_slot::finished_sink final : request_sink {
  finished_sink(model_slot& s, request_id i, std::shared_ptr<request_sink> in) : slot(s), id(i), inner(std::move(in)) {}
  void on_token(const token_event& event) override { inner->on_token(event); }
  void on_finish(const finish_event& event) override {
    inner->on_finish(event);
    slot.on_finished(id);
  }
  model_slot& slot;
  request_id id;
  std::shared_ptr<request_sink> inner;
};

namespace {

/// The model the gateway keeps: everything but the weights (their config stays, for the
/// vocabulary and width).
loaded_model without_weights(const loaded_model& m) {
  loaded_model out = m;
  if (m.weights) {
    auto config_only = std::make_shared<model_weights>();
    config_only->config = m.weights->config;
    out.weights = std::move(config_only);
  }
  return out;
}

void finish_all(std::vector<std::shared_ptr<request_sink>>& sinks, finish_reason reason, std::optional<error> cause) {
  for (auto& s : sinks) {
    finish_event e;
    e.reason = reason;
    e.cause = cause;
    s->on_finish(e);
  }
  sinks.clear();
}

}  // namespace

model_slot::model_slot(deployment settings, const loaded_model& info, double keep_alive_s, hooks h)
    : settings_(std::move(settings)), info_(without_weights(info)), hooks_(std::move(h)), keep_alive_s_(keep_alive_s) {}

model_slot::~model_slot() { shutdown(0.0); }

std::optional<error> model_slot::forward_locked(waiting& w) {
  std::vector<submission> wrapped;
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    wrapped.push_back({std::move(w.requests[i].request),
                       std::make_shared<finished_sink>(*this, w.ids[i], w.requests[i].sink)});
  }
  // The engine posts its events; none reaches on_finished() before this lock is let go.
  result<std::vector<request_id>> ids = std::vector<request_id>{};
  if (wrapped.size() == 1) {
    auto id = engine_->submit(std::move(wrapped[0].request), std::move(wrapped[0].sink));
    if (!id) return id.error();
    ids->push_back(*id);
  } else {
    ids = engine_->submit_all(std::move(wrapped));
    if (!ids) return ids.error();
  }
  for (std::size_t i = 0; i < ids->size(); ++i) running_[w.ids[i]] = (*ids)[i];
  last_used_ = clock::now();
  return std::nullopt;
}

result<std::vector<request_id>> model_slot::enqueue(std::vector<submission> requests) {
  if (requests.empty()) return std::vector<request_id>{};
  for (const auto& s : requests) {
    if (s.request.prompt.empty()) return make_error(errc::invalid_argument, "the prompt is empty");
    if (info_.max_context > 0 && int(s.request.prompt.size()) >= info_.max_context)
      return make_error(errc::invalid_argument, "the prompt has " + std::to_string(s.request.prompt.size()) +
                                                    " tokens; the model's context is " + std::to_string(info_.max_context));
  }
  bool wants_load = false;
  std::vector<request_id> ids;
  {
    std::lock_guard lock(mutex_);
    if (is_shut_down_) return make_error(errc::shutting_down, "the server is shutting down");
    waiting w;
    for (std::size_t i = 0; i < requests.size(); ++i) w.ids.push_back(next_id_++);
    ids = w.ids;
    w.requests = std::move(requests);
    if (state_ == model_state::loaded) {
      if (auto refused = forward_locked(w)) return std::unexpected(*refused);
      return ids;
    }
    const int limit = settings_.server.max_waiting_requests;
    if (num_waiting_ + int(w.requests.size()) > limit)
      return make_error(errc::queue_full, "model `" + info_.name + "` is loading and " + std::to_string(num_waiting_) +
                                              " requests wait for it (server.max_waiting_requests = " +
                                              std::to_string(limit) + ")");
    num_waiting_ += int(w.requests.size());
    waiting_.push_back(std::move(w));
    last_used_ = clock::now();
    wants_load = state_ != model_state::loading;
  }
  if (wants_load && hooks_.wants_load) hooks_.wants_load(*this);
  return ids;
}

result<request_id> model_slot::submit(generate_request request, std::shared_ptr<request_sink> sink) {
  std::vector<submission> one;
  one.push_back({std::move(request), std::move(sink)});
  auto ids = enqueue(std::move(one));
  if (!ids) return std::unexpected(ids.error());
  return ids->front();
}

result<std::vector<request_id>> model_slot::submit_all(std::vector<submission> requests) {
  return enqueue(std::move(requests));
}

void model_slot::cancel(request_id id) {
  std::shared_ptr<request_sink> cancelled;
  bool now_idle = false;
  {
    std::lock_guard lock(mutex_);
    if (auto it = running_.find(id); it != running_.end()) {
      if (engine_) engine_->cancel(it->second);
      return;
    }
    for (auto w = waiting_.begin(); w != waiting_.end(); ++w) {
      for (std::size_t i = 0; i < w->ids.size(); ++i) {
        if (w->ids[i] != id) continue;
        cancelled = std::move(w->requests[i].sink);
        w->ids.erase(w->ids.begin() + std::ptrdiff_t(i));
        w->requests.erase(w->requests.begin() + std::ptrdiff_t(i));
        if (w->ids.empty()) waiting_.erase(w);
        --num_waiting_;
        now_idle = num_waiting_ == 0 && running_.empty();
        break;
      }
      if (cancelled) break;
    }
  }
  if (!cancelled) return;
  std::vector<std::shared_ptr<request_sink>> sinks{cancelled};
  finish_all(sinks, finish_reason::cancelled, std::nullopt);
  if (now_idle && hooks_.became_idle) hooks_.became_idle();
}

void model_slot::on_finished(request_id id) {
  bool now_idle = false;
  {
    std::lock_guard lock(mutex_);
    running_.erase(id);
    last_used_ = clock::now();
    now_idle = running_.empty() && num_waiting_ == 0;
  }
  if (now_idle && hooks_.became_idle) hooks_.became_idle();
}

engine_snapshot model_slot::snapshot() const {
  std::lock_guard lock(mutex_);
  engine_snapshot snap = engine_ ? engine_->snapshot() : engine_snapshot{};
  snap.num_waiting_to_start += num_waiting_;
  snap.gauges.num_requests_waiting += num_waiting_;
  return snap;
}

void model_slot::shutdown(double grace_s) {
  std::shared_ptr<engine_api> eng;
  std::vector<std::shared_ptr<request_sink>> sinks;
  {
    std::lock_guard lock(mutex_);
    is_shut_down_ = true;
    eng = engine_;  // kept by the slot until destroyed: late cancels still reach it
    for (auto& w : waiting_)
      for (auto& s : w.requests) sinks.push_back(std::move(s.sink));
    waiting_.clear();
    num_waiting_ = 0;
  }
  finish_all(sinks, finish_reason::aborted, error{errc::shutting_down, "the server is shutting down"});
  if (eng) eng->shutdown(grace_s);
}

engine_health model_slot::health() const {
  std::lock_guard lock(mutex_);
  if (engine_) return engine_->health();
  engine_health h;
  h.is_stopped = is_shut_down_;
  h.is_healthy = !is_shut_down_;
  return h;
}

std::string model_slot::render_metrics() const {
  std::shared_ptr<engine_api> eng;
  int waiting = 0;
  {
    std::lock_guard lock(mutex_);
    eng = engine_;
    waiting = num_waiting_;
  }
  if (eng) return eng->render_metrics();
  engine_gauges gauges;
  gauges.num_requests_waiting = waiting;
  return metrics_->render(info_.name, gauges);
}

void model_slot::set_step_sink(std::shared_ptr<step_sink> sink) {
  std::lock_guard lock(mutex_);
  step_sink_ = sink;
  if (engine_) engine_->set_step_sink(std::move(sink));
}

bool model_slot::has_step_sink() const {
  std::lock_guard lock(mutex_);
  return step_sink_ != nullptr;
}

model_status model_slot::status() const {
  std::lock_guard lock(mutex_);
  model_status s;
  s.state = state_;
  s.size_bytes = state_ == model_state::loaded ? size_bytes_ : estimate_bytes_;
  s.error = state_ == model_state::failed ? last_error_ : "";
  s.keep_alive_s = keep_alive_s_;
  s.num_requests = int(running_.size()) + num_waiting_;
  return s;
}

model_state model_slot::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

bool model_slot::is_idle() const {
  std::lock_guard lock(mutex_);
  return running_.empty() && num_waiting_ == 0;
}

bool model_slot::has_waiting() const {
  std::lock_guard lock(mutex_);
  return num_waiting_ > 0;
}

model_slot::clock::time_point model_slot::last_used() const {
  std::lock_guard lock(mutex_);
  return last_used_;
}

double model_slot::keep_alive_s() const {
  std::lock_guard lock(mutex_);
  return keep_alive_s_;
}

void model_slot::set_keep_alive(double seconds) {
  std::lock_guard lock(mutex_);
  keep_alive_s_ = seconds;
  last_used_ = clock::now();
}

std::int64_t model_slot::size_bytes() const {
  std::lock_guard lock(mutex_);
  return state_ == model_state::loaded ? size_bytes_ : estimate_bytes_;
}

void model_slot::set_estimate(std::int64_t bytes) {
  std::lock_guard lock(mutex_);
  estimate_bytes_ = bytes;
}

bool model_slot::try_begin_load() {
  std::lock_guard lock(mutex_);
  if (is_shut_down_ || state_ == model_state::loaded || state_ == model_state::loading) return false;
  state_ = model_state::loading;
  return true;
}

bool model_slot::attach(std::shared_ptr<engine_api> eng, std::int64_t size_bytes) {
  std::vector<std::pair<std::vector<std::shared_ptr<request_sink>>, error>> refused;
  {
    std::lock_guard lock(mutex_);
    if (is_shut_down_) return false;
    engine_ = std::move(eng);
    if (step_sink_) engine_->set_step_sink(step_sink_);
    state_ = model_state::loaded;
    size_bytes_ = size_bytes;
    estimate_bytes_ = size_bytes;
    last_error_.clear();
    last_used_ = clock::now();
    auto waiting = std::move(waiting_);
    waiting_.clear();
    num_waiting_ = 0;
    for (auto& w : waiting) {
      std::vector<std::shared_ptr<request_sink>> sinks;
      for (const auto& s : w.requests) sinks.push_back(s.sink);
      if (auto why = forward_locked(w)) refused.emplace_back(std::move(sinks), *why);
    }
  }
  for (auto& [sinks, why] : refused) finish_all(sinks, finish_reason::error, why);
  if (is_idle() && hooks_.became_idle) hooks_.became_idle();
  return true;
}

void model_slot::fail_load(const error& why) {
  std::vector<std::shared_ptr<request_sink>> sinks;
  const error cause{errc::unavailable, "model `" + info_.name + "` could not be loaded: " + why.message};
  {
    std::lock_guard lock(mutex_);
    state_ = model_state::failed;
    last_error_ = why.message;
    for (auto& w : waiting_)
      for (auto& s : w.requests) sinks.push_back(std::move(s.sink));
    waiting_.clear();
    num_waiting_ = 0;
  }
  finish_all(sinks, finish_reason::error, cause);
  if (hooks_.became_idle) hooks_.became_idle();
}

std::shared_ptr<engine_api> model_slot::detach_if_idle() {
  std::lock_guard lock(mutex_);
  if (state_ != model_state::loaded || !running_.empty() || num_waiting_ > 0) return nullptr;
  state_ = model_state::unloaded;
  size_bytes_ = 0;
  return std::move(engine_);
}

result<void> model_slot::load_lora_adapter(const std::string&, const std::string&) {
  return make_error(errc::unsupported, "a server of several models takes its LoRA adapters from each entry's "
                                       "[models.lora] adapters, at start");
}

result<void> model_slot::unload_lora_adapter(const std::string& name) { return load_lora_adapter(name, {}); }

}  // namespace inflight
