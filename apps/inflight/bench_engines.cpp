#include "apps/inflight/bench_engines.hpp"

#include <cmath>
#include <map>

#include "core/engine/metrics/prometheus_merge.hpp"

namespace inflight::app {
namespace {

/// A counter per engine: by the engine label behind a router, else the server's own.
std::map<std::string, double> per_engine(const std::string& page, const std::string& name) {
  auto by_engine = sum_by_label(page, name, "engine");
  if (!by_engine.empty()) return by_engine;
  double total = 0.0;
  for (const auto& [model, v] : sum_by_label(page, name, "model_name")) total += v;
  return {{"server", total}};
}

std::uint64_t delta(const std::map<std::string, double>& after, const std::map<std::string, double>& before,
                    const std::string& engine) {
  auto a = after.find(engine), b = before.find(engine);
  const double v = (a == after.end() ? 0.0 : a->second) - (b == before.end() ? 0.0 : b->second);
  return v > 0 ? static_cast<std::uint64_t>(std::llround(v)) : 0;
}

}  // namespace

std::vector<engine_work> engine_work_between(const std::string& before, const std::string& after) {
  const std::string queries = "inflight:prefix_cache_queries_total", hits = "inflight:prefix_cache_hits_total",
                    done = "inflight:request_success_total";
  const auto q0 = per_engine(before, queries), q1 = per_engine(after, queries);
  const auto h0 = per_engine(before, hits), h1 = per_engine(after, hits);
  const auto d0 = per_engine(before, done), d1 = per_engine(after, done);
  std::vector<engine_work> out;
  for (const auto& [engine, v] : q1) {
    engine_work w{engine, delta(d1, d0, engine), delta(q1, q0, engine), delta(h1, h0, engine)};
    out.push_back(w);
  }
  return out;
}

void print_engine_work(std::FILE* out, const std::vector<engine_work>& engines) {
  if (engines.empty()) return;
  std::fprintf(out, "%-22s %9s %14s %13s %15s %9s\n", "engine", "requests", "prompt tokens", "cache hits",
               "prefill tokens", "hit rate");
  engine_work total{"total"};
  auto line = [&](const engine_work& w) {
    const double rate = w.num_prompt_tokens > 0 ? 100.0 * double(w.num_cached_tokens) / double(w.num_prompt_tokens) : 0.0;
    std::fprintf(out, "%-22s %9llu %14llu %13llu %15llu %8.1f%%\n", w.engine.c_str(),
                 (unsigned long long)w.num_requests, (unsigned long long)w.num_prompt_tokens,
                 (unsigned long long)w.num_cached_tokens, (unsigned long long)w.num_prefill_tokens(), rate);
  };
  for (const auto& w : engines) {
    line(w);
    total.num_requests += w.num_requests;
    total.num_prompt_tokens += w.num_prompt_tokens;
    total.num_cached_tokens += w.num_cached_tokens;
  }
  if (engines.size() > 1) line(total);
}

nlohmann::json to_json(const std::vector<engine_work>& engines) {
  auto out = nlohmann::json::array();
  for (const auto& w : engines)
    out.push_back({{"engine", w.engine}, {"requests", w.num_requests}, {"prompt_tokens", w.num_prompt_tokens},
                   {"cached_tokens", w.num_cached_tokens}, {"prefill_tokens", w.num_prefill_tokens()}});
  return out;
}

}  // namespace inflight::app
