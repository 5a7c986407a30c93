#include "actors/engine/engine.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <random>
#include <thread>

#include "actors/actor_runtime.hpp"
#include "actors/engine/executor_actor.hpp"
#include "actors/engine/kv_allocator_actor.hpp"
#include "actors/engine/request_actor.hpp"
#include "actors/engine/scheduler_actor.hpp"
#include "backends/backend_factory.hpp"
#include "backends/debug_backend.hpp"
#include "backends/draft_model.hpp"
#include "core/engine/request/prompt_limit.hpp"
#include "core/engine/sampling/sampler.hpp"
#include "core/engine/sched/plugin_dir.hpp"
#include "core/engine/spec/drafter_plugin.hpp"
#include "core/grammar/token_index.hpp"

namespace inflight {

struct engine::impl {
  deployment settings;
  loaded_model model;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  scheduler_actor sched;
  executor_actor exec;
  kv_allocator_actor kv;
  std::shared_ptr<engine_metrics> metrics = std::make_shared<engine_metrics>();
  std::shared_ptr<shared_gauges> gauges = std::make_shared<shared_gauges>();
  std::filesystem::path plugin_dir;
  std::shared_ptr<std::atomic<int>> num_live = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<admission_gate> gate;
  /// LoRA adapters by name; null when the backend does not run adapters.
  std::unique_ptr<lora_registry> loras;
  std::string backend_name;
  std::atomic<request_id> next_id{1};
  std::atomic<bool> is_accepting{true};
  std::atomic<bool> is_stopped{false};
  // CAF 0.17's actor system must be destroyed on the thread that created it, and
  // callers shut down from any thread: the system lives on a thread of its own.
  std::thread system_thread;
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool is_stop_requested = false;
};

result<std::filesystem::path> try_policy_plugin_dir(const scheduler_settings& s) {
  // Without /proc the candidates next to the binary cannot exist; the error says so.
  auto exe = try_current_executable();
  return try_resolve_plugin_dir(s.plugin_dir, std::getenv("INFLIGHT_PLUGIN_DIR"),
                                exe ? *exe : std::filesystem::path("/proc/self/exe"));
}

namespace {

result<policy> load_policy(const scheduler_settings& s, const std::filesystem::path& plugin_dir) {
  policy_settings settings;
  if (auto it = s.policy_settings.find(s.policy); it != s.policy_settings.end()) {
    auto parsed = try_parse_policy_settings(it->second);
    if (!parsed) return std::unexpected(parsed.error());
    settings = std::move(*parsed);
  }
  return policy::try_load(plugin_dir, s.policy, settings);
}

}  // namespace

namespace {

/// Why a request or a deployment cannot have adapters here (impl::loras is null).
error no_adapters(const engine::impl& p) {
  return {errc::unsupported, "LoRA adapters do not run on the " + p.backend_name + " backend yet (the cpu backend runs them)"};
}

}  // namespace

speculative_config speculative_config_of(const speculative_settings& s) {
  speculative_config c;
  c.method = s.method == "off" ? "" : s.method;
  c.num_speculative_tokens = s.num_speculative_tokens;
  c.ngram = {s.prompt_lookup_min, std::max(s.prompt_lookup_min, s.prompt_lookup_max)};
  c.row_cost = s.row_cost;
  c.learn_row_cost = s.learn_row_cost;
  return c;
}

namespace {

result<scheduler> make_scheduler(const deployment& d, const loaded_model& m, const kv_snapshot& kv,
                                 const std::filesystem::path& plugin_dir, const draft_model* draft) {
  auto pol = load_policy(d.scheduler, plugin_dir);
  if (!pol) return std::unexpected(pol.error());
  scheduler_config c;
  c.max_num_batched_tokens = d.engine.max_num_batched_tokens;
  c.max_num_seqs = d.engine.max_num_seqs;
  c.max_loras_per_step = d.lora.max_loras_per_step;
  c.max_seq_len = m.max_context;
  c.eos_token_ids = m.eos_ids;
  c.seed = std::random_device{}();
  c.enable_prefix_caching = d.engine.enable_prefix_caching;
  c.default_targets = {d.scheduler.ttft_target_ms, d.scheduler.tpot_target_ms};
  c.speculative = speculative_config_of(d.speculative);
  if (draft != nullptr) c.speculative.draft_model_context = draft->max_context();
  auto sched = scheduler::try_create(c, kv, std::move(*pol), engine_now);
  if (!sched) return sched;
  // Every drafter plugin of the plugin directory, for the requests (or the deployment)
  // that choose it by name.
  const auto& built_in = speculative_methods();
  for (const auto& name : find_drafter_plugins(plugin_dir)) {
    if (std::find(built_in.begin(), built_in.end(), name) != built_in.end())
      return make_error(errc::invalid_argument, "the drafter plugin " + (plugin_dir / drafter_plugin_file_name(name)).string() +
                                                    " takes the name of a built-in speculative method");
    auto d = plugin_drafter::try_load(plugin_dir, name, m.weights->config.vocab_size);
    if (!d) return std::unexpected(d.error());
    sched->add_drafter(name, std::move(*d));
  }
  return sched;
}

/// The deployment's draft model (speculative.draft_model), on the CPU, with blocks of the
/// target's size; none when it names none.
result<std::unique_ptr<draft_model>> load_draft_model(const deployment& d, const loaded_model& m, int block_size) {
  if (d.speculative.draft_model.empty()) return nullptr;
  draft_model_options o;
  o.block_size = block_size;
  o.kv_memory_bytes = d.speculative.draft_kv_memory_bytes;
  o.num_threads = d.engine.threads;
  o.max_context = m.max_context;
  o.vocab_size = m.weights->config.vocab_size;
  return draft_model::load(d.speculative.draft_model, o);
}

}  // namespace

engine::engine(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

engine::~engine() { shutdown(0.0); }

result<std::unique_ptr<engine>> engine::start(const deployment& d, loaded_model model,
                                              std::shared_ptr<engine_metrics> metrics) {
  auto p = std::make_unique<impl>();
  p->settings = d;
  if (metrics) p->metrics = std::move(metrics);
  auto plugin_dir = try_policy_plugin_dir(d.scheduler);
  if (!plugin_dir) return std::unexpected(plugin_dir.error());
  p->plugin_dir = *plugin_dir;
  auto be = make_backend(d.engine, model.weights);
  if (!be) return std::unexpected(be.error());
  if (is_active(d.debug)) *be = make_debug_backend(std::move(*be), d.debug);
  p->backend_name = (*be)->name();
  if ((*be)->runs_adapters()) {
    p->loras = std::make_unique<lora_registry>(model.weights->config, d.lora.max_cpu_loras);
    for (const auto& [name, path] : d.lora.adapters)
      if (auto ok = p->loras->add(name, path); !ok) return std::unexpected(ok.error());
  } else if (!d.lora.adapters.empty()) {
    return std::unexpected(no_adapters(*p));
  }
  p->gate = std::make_shared<admission_gate>(
      admission_gate::limits{d.server.max_waiting_requests, d.server.max_waiting_tokens});
  auto draft = load_draft_model(d, model, (*be)->block_size());
  if (!draft) return std::unexpected(draft.error());
  auto kv = kv_manager::try_create((*be)->num_kv_blocks(), (*be)->block_size(), *draft ? (*draft)->num_kv_blocks() : 0);
  if (!kv) return std::unexpected(kv.error());
  auto sched = make_scheduler(d, model, kv->snapshot(), p->plugin_dir, draft->get());
  if (!sched) return std::unexpected(sched.error());
  // What snapshot() says before the scheduler publishes its first.
  p->gauges->snapshot.num_blocks = p->gauges->snapshot.num_free_blocks = (*be)->num_kv_blocks();
  p->model = std::move(model);
  configure_compute_runtime(p->cfg);
  auto owned_backend = std::make_shared<std::unique_ptr<backend>>(std::move(*be));
  auto owned_draft = std::make_shared<std::unique_ptr<draft_model>>(std::move(*draft));
  auto owned_sched = std::make_shared<std::optional<step_loop>>(
      step_loop(std::move(*sched), step_loop_options{d.server.max_queue_time_s, p->gate}));
  auto owned_kv = std::make_shared<std::optional<kv_manager>>(std::move(*kv));
  std::promise<std::optional<error>> is_ready;  // set: the warm-up failed
  p->system_thread = std::thread([raw = p.get(), &is_ready, owned_backend, owned_draft, owned_sched, owned_kv] {
    auto& q = *raw;
    q.sys = std::make_unique<caf::actor_system>(q.cfg);
    q.exec = q.sys->spawn<caf::detached>(executor_fn, owned_backend, owned_draft);
    // The first steps run on the executor's thread now, not in the first request's TTFT.
    std::optional<error> failure;
    {
      caf::scoped_actor self{*q.sys};
      self->request(q.exec, caf::infinite, warm_up_atom::value)
          .receive([&](warm_up_reply& out) { failure = std::move(out.failure); },
                   [&](caf::error& e) { failure = error{errc::backend_error, to_string(e)}; });
    }
    if (failure) {
      failure->message = "the backend failed its warm-up step: " + failure->message;
      caf::anon_send_exit(q.exec, caf::exit_reason::user_shutdown);
      q.exec = nullptr;
      is_ready.set_value(std::move(failure));
      q.sys.reset();
      return;
    }
    q.kv = q.sys->spawn(kv_allocator_fn, owned_kv);
    q.sched = q.sys->spawn(scheduler_fn, owned_sched, q.exec, q.kv, q.metrics, q.gauges);
    is_ready.set_value(std::nullopt);
    std::unique_lock lock(q.stop_mutex);
    q.stop_cv.wait(lock, [&] { return q.is_stop_requested; });
    caf::anon_send_exit(q.sched, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(q.kv, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(q.exec, caf::exit_reason::user_shutdown);
    q.sched = nullptr;
    q.kv = nullptr;
    q.exec = nullptr;
    q.sys.reset();  // waits for every actor
  });
  if (auto failure = is_ready.get_future().get()) {
    p->system_thread.join();
    return std::unexpected(std::move(*failure));
  }
  return std::unique_ptr<engine>(new engine(std::move(p)));
}

namespace {

/// A request checked and counted in at the admission gate, ready for the scheduler
/// actor (it leaves the gate there, or through forget()).
result<queued_request> prepare(engine::impl& p, generate_request request, std::shared_ptr<request_sink> sink) {
  if (!p.is_accepting) return make_error(errc::shutting_down, "the server is shutting down");
  if (request.prompt.empty()) return make_error(errc::invalid_argument, "the prompt is empty");
  const int max_context = p.model.max_context;
  if (int(request.prompt.size()) > max_prompt_tokens(max_context, request.is_prefill_only())) {
    return make_error(errc::invalid_argument, "the prompt has " + std::to_string(request.prompt.size()) +
                                                  " tokens, but the model's context is " +
                                                  std::to_string(max_context) + " tokens (including the output)");
  }
  const int vocab = p.model.weights->config.vocab_size;
  for (auto t : request.prompt) {
    if (t < 0 || t >= vocab) {
      return make_error(errc::invalid_argument, "token id " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  for (auto t : request.score_rows) {
    if (t < 0 || t >= vocab) {
      return make_error(errc::invalid_argument, "score row " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  if (request.is_prefill_only()) {  // nothing is sampled; policies see one output (the score, the embedding)
    request.params = sampling_params{};
    request.params.max_tokens = 1;
  }
  if (auto ok = try_validate(request.params); !ok) return std::unexpected(ok.error());
  for (const auto& e : request.params.logit_bias) {
    if (e.token >= vocab) {
      return make_error(errc::invalid_argument,
                        "logit_bias: token id " + std::to_string(e.token) + " is outside the vocabulary");
    }
  }
  // A grammar compiled for a larger vocabulary is another tokenizer's: its ids would mean
  // other tokens here. A smaller one is the tokenizer of a padded model vocabulary.
  if (const auto& g = request.params.grammar; g && g->vocab().size() > vocab) {
    return make_error(errc::invalid_argument, "the grammar was compiled for a vocabulary of " +
                                                  std::to_string(g->vocab().size()) + " tokens; the model has " +
                                                  std::to_string(vocab));
  }
  // The adapter's weights go with the sequence (and its steps) until it finishes.
  std::shared_ptr<const lora_adapter> adapter;
  if (!request.adapter.empty()) {
    if (!p.loras) return std::unexpected(no_adapters(p));
    auto a = p.loras->acquire(request.adapter);
    if (!a) return std::unexpected(a.error());
    adapter = std::move(*a);
    // Adapters never share cached blocks with the base model, each other, or an
    // earlier adapter of the same name.
    request.cache_salt += "\x1flora:" + std::to_string(adapter->id) + ":" + request.adapter;
  }
  // Entered here, left by the step loop when the request starts or finishes.
  if (auto ok = p.gate->try_enter(int(request.prompt.size())); !ok) {
    if (ok.error().code == errc::queue_full) ++p.metrics->requests_refused_total;
    return std::unexpected(ok.error());
  }
  if (adapter) p.metrics->count_lora_request(adapter->name);
  const request_id id = p.next_id++;
  // The request actor keeps what it needs for the text; the sequence takes the rest.
  request_context ctx{.id = id,
                      .stop = std::move(request.stop),
                      .stop_token_ids = request.params.stop_token_ids,
                      .num_prompt_tokens = int(request.prompt.size()),
                      .last_prompt_token = request.prompt.back(),
                      .has_logprobs = request.params.logprobs > 0,
                      .sink = std::move(sink),
                      .tok = p.model.tok,
                      .metrics = p.metrics,
                      .num_live = p.num_live};
  seq_request seq{.id = id, .prompt = std::move(request.prompt), .params = std::move(request.params),
                  .priority = request.priority, .cache_salt = std::move(request.cache_salt), .seed = request.seed,
                  .targets = request.targets, .arrival = engine_now(), .timeout_s = request.timeout_s};
  seq.score_rows = std::move(request.score_rows);
  seq.pooling = request.pooling;
  seq.speculation = std::move(request.speculation);
  seq.adapter = std::move(adapter);
  return queued_request{std::move(seq), std::move(ctx)};
}

/// A prepared request that will not be sent after all: out of the gate again.
void forget(engine::impl& p, const queued_request& q) { p.gate->leave(int(q.seq.prompt.size())); }

}  // namespace

result<request_id> engine::submit(generate_request request, std::shared_ptr<request_sink> sink) {
  auto& p = *impl_;
  auto q = prepare(p, std::move(request), std::move(sink));
  if (!q) return std::unexpected(q.error());
  const request_id id = q->seq.id;
  ++*p.num_live;
  caf::anon_send(p.sched, submit_atom::value, std::move(q->seq), std::move(q->ctx));
  return id;
}

result<std::vector<request_id>> engine::submit_all(std::vector<submission> requests) {
  auto& p = *impl_;
  std::vector<queued_request> ready;
  std::vector<request_id> ids;
  for (auto& s : requests) {
    auto q = prepare(p, std::move(s.request), std::move(s.sink));
    if (!q) {
      for (const auto& r : ready) forget(p, r);
      return std::unexpected(q.error());
    }
    ids.push_back(q->seq.id);
    ready.push_back(std::move(*q));
  }
  if (ready.empty()) return ids;
  *p.num_live += int(ready.size());
  caf::anon_send(p.sched, submit_all_atom::value, std::move(ready));
  return ids;
}

void engine::cancel(request_id id) {
  if (!impl_->is_stopped) caf::anon_send(impl_->sched, cancel_atom::value, id);
}

engine_snapshot engine::snapshot() const {
  // Published by the scheduler actor; a scoped_actor here would tie this thread to
  // the actor system (CAF 0.17 then cannot shut down while the thread lives).
  engine_snapshot snap;
  {
    std::lock_guard lock(impl_->gauges->mutex);
    snap = impl_->gauges->snapshot;
  }
  snap.num_waiting_to_start = impl_->gate->num_requests();
  snap.num_waiting_tokens = impl_->gate->num_tokens();
  return snap;
}

void engine::shutdown(double grace_s) {
  auto& p = *impl_;
  if (p.is_stopped) return;
  p.is_accepting = false;
  caf::anon_send(p.sched, drain_atom::value);
  using clock = std::chrono::steady_clock;
  // Done when every request has finished and the scheduler has handed their blocks back.
  const auto is_drained = [&] { return *p.num_live == 0 && snapshot().is_idle; };
  const auto wait_until = [&](clock::time_point deadline) {
    while (!is_drained() && clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  wait_until(clock::now() + std::chrono::microseconds(std::int64_t(grace_s * 1e6)));
  caf::anon_send(p.sched, abort_atom::value);
  wait_until(clock::now() + std::chrono::seconds(30));
  p.is_stopped = true;
  {
    std::lock_guard lock(p.stop_mutex);
    p.is_stop_requested = true;
  }
  p.stop_cv.notify_all();
  if (p.system_thread.joinable()) p.system_thread.join();
}

engine_health engine::health() const {
  const auto snap = snapshot();
  engine_health h;
  h.is_stopped = impl_->is_stopped;
  h.num_consecutive_failed_steps = snap.num_consecutive_failed_steps;
  h.num_failed_steps = snap.num_failed_steps;
  h.last_step_error = snap.last_step_error;
  h.is_healthy = !h.is_stopped && h.num_consecutive_failed_steps < impl_->settings.engine.unhealthy_after_failed_steps;
  return h;
}
const loaded_model& engine::model() const { return impl_->model; }
const deployment& engine::settings() const { return impl_->settings; }
const std::filesystem::path& engine::plugin_dir() const { return impl_->plugin_dir; }
engine_metrics& engine::metrics() { return *impl_->metrics; }
void engine::set_step_sink(std::shared_ptr<step_sink> sink) { impl_->gauges->steps.set_sink(std::move(sink)); }
bool engine::has_step_sink() const { return impl_->gauges->steps.is_active(); }
void engine::set_cache_sink(std::shared_ptr<cache_sink> sink) { impl_->gauges->caches.set_sink(std::move(sink)); }
void engine::request_full_report() {
  if (!impl_->is_stopped) caf::anon_send(impl_->sched, full_report_atom::value);
}
std::string engine::render_metrics() const {
  const auto adapters = impl_->loras ? impl_->loras->names() : std::vector<std::string>{};
  return impl_->metrics->render(impl_->model.name, snapshot().gauges, adapters, impl_->settings.lora.max_loras_per_step);
}
std::vector<lora_adapter_info> engine::lora_adapters() const {
  return impl_->loras ? impl_->loras->list() : std::vector<lora_adapter_info>{};
}
result<void> engine::load_lora_adapter(const std::string& name, const std::string& path) {
  if (!impl_->loras) return std::unexpected(no_adapters(*impl_));
  return impl_->loras->add(name, path);
}
result<void> engine::unload_lora_adapter(const std::string& name) {
  if (!impl_->loras) return make_error(errc::not_found, "the LoRA adapter '" + name + "' is not loaded");
  return impl_->loras->remove(name);
}

}  // namespace inflight
