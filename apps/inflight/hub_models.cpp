#include "apps/inflight/hub_models.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>


namespace inflight::app {

namespace {

/// A line on stderr redrawn four times a second while files download, when stderr is a
/// terminal: bytes, rate and time left. Log lines print above it; in a log (no
/// terminal) only they print.
class progress_line {
 public:
  explicit progress_line(std::string label) : label_(std::move(label)), is_tty_(::isatty(STDERR_FILENO) == 1) {
    if (is_tty_) thread_ = std::thread([this] { run(); });
  }
  ~progress_line() {
    {
      std::lock_guard lock(mutex_);
      is_done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  hub::hub_progress& progress() { return progress_; }
  void log(const std::string& line) {
    std::lock_guard lock(mutex_);
    std::fprintf(stderr, "%s%s\n", is_tty_ ? "\r\033[K" : "", line.c_str());
    if (is_tty_ && has_drawn_) draw();
  }

 private:
  void run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return is_done_; })) {
      seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (progress_.num_files == progress_.num_files_done) continue;  // nothing downloading
      draw();
      has_drawn_ = true;
    }
    if (has_drawn_) std::fprintf(stderr, "\r\033[K");
  }
  void draw() {
    const double done = double(progress_.num_done_bytes), total = double(progress_.num_total_bytes);
    const double rate = seconds_ > 0 ? done / seconds_ : 0.0;  // includes resumed bytes: a first estimate
    const double left = rate > 0 && total > done ? (total - done) / rate : 0.0;
    std::fprintf(stderr, "\r\033[K%s: %.1f / %.1f MB (%d of %d files), %.1f MB/s, %d:%02d left", label_.c_str(), done / 1e6,
                 total / 1e6, progress_.num_files_done.load(), progress_.num_files.load(), rate / 1e6, int(left) / 60,
                 int(left) % 60);
    std::fflush(stderr);
  }

  std::string label_;
  bool is_tty_;
  hub::hub_progress progress_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool is_done_ = false;
  bool has_drawn_ = false;
  double seconds_ = 0.0;
  std::thread thread_;
};

}  // namespace

result<hub::fetched_model> try_fetch_named(const std::string& spec, const std::string& token_file) {
  auto name = hub::try_parse_hub_name(spec);
  if (!name) return std::unexpected(name.error());
  auto options = hub::hub_options_from_env(token_file);
  if (!options) return std::unexpected(options.error());
  progress_line line(hub::served_name_of(*name));
  options->progress = &line.progress();
  options->log = [&line](const std::string& s) { line.log(s); };
  auto m = hub::try_fetch(*name, *options);
  if (m && m->is_cache_only) line.log("inflight: " + spec + " from the cache (commit " + m->commit + ")");
  return m;
}

namespace {

/// One model's hub name fetched into m.path (its name, when unset, the hub name's), or
/// random weights when the Hub is out of reach and m.fallback says so. `prefix` names
/// the model in messages ("" for [model], "model NAME: " for a [[models]] entry).
result<void> try_fetch_model(model_settings& m, const std::string& prefix) {
  auto name = hub::try_parse_hub_name(m.path);
  if (!name) return make_error(name.error().code, prefix + name.error().message);
  auto fetched = try_fetch_named(m.path, m.hf_token_file);
  if (!fetched && fetched.error().code == errc::unavailable && m.fallback == "dummy") {
    std::fprintf(stderr, "inflight: %s%s\ninflight: model.fallback = \"dummy\": serving random weights instead of %s\n",
                 prefix.c_str(), fetched.error().message.c_str(), m.path.c_str());
    m.path.clear();
    m.format = "dummy";
    return {};
  }
  if (!fetched) return make_error(fetched.error().code, prefix + fetched.error().message);
  if (m.name.empty()) m.name = hub::served_name_of(*name);
  m.path = fetched->path.string();
  return {};
}

}  // namespace

result<void> try_resolve_hub_models(deployment& d) {
  if (hub::is_hub_name(d.model.path))
    if (auto ok = try_fetch_model(d.model, ""); !ok) return ok;
  for (auto& e : d.models)
    if (hub::is_hub_name(e.model.path))
      if (auto ok = try_fetch_model(e.model, "model " + e.name + ": "); !ok) return ok;
  const auto fetch_adapters = [&](lora_settings& lora) -> result<void> {  // PEFT repositories, or GGUF LoRA files
    for (auto& [name, path] : lora.adapters) {
      if (!hub::is_hub_name(path)) continue;
      auto m = try_fetch_named(path, d.model.hf_token_file);
      if (!m) return make_error(m.error().code, "LoRA adapter " + name + ": " + m.error().message);
      path = m->path.string();
    }
    return {};
  };
  if (auto ok = fetch_adapters(d.lora); !ok) return ok;
  for (auto& e : d.models)
    if (e.lora)
      if (auto ok = fetch_adapters(*e.lora); !ok) return ok;
  if (hub::is_hub_name(d.speculative.draft_model)) {
    auto m = try_fetch_named(d.speculative.draft_model, d.model.hf_token_file);
    if (!m) return make_error(m.error().code, "speculative.draft_model: " + m.error().message);
    d.speculative.draft_model = m->path.string();
  }
  return {};
}

}  // namespace inflight::app
