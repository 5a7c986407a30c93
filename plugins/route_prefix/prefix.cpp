// prefix: cache-aware routing as SGLang's router does it. Each request goes to the
// engine holding the longest leading run of its prompt's KV blocks (from the router's
// exact per-engine index), so shared prefixes are computed once per engine instead of
// once per request; ties go to the less-loaded engine. Two guards:
//   - imbalance: when the busiest available engine holds more than
//     `balance_abs_threshold` requests (waiting + running) above the idlest one and more
//     than `balance_rel_threshold` times as many, the request goes to the least-loaded
//     engine. Requests, as SGLang's router counts its workers' queues: not least_load's
//     weighted 4 x waiting + running, under which the same 32 meant only 8 waiting
//     requests and a burst spread each shared prefix over every engine;
//   - a weak match: when the best engine holds less than `cache_threshold` of the
//     prompt's blocks (or the prompt has no full block), the cache does not decide and
//     the request goes to the least-loaded engine.
// Settings (defaults as SGLang's router): balance_abs_threshold = 32,
// balance_rel_threshold = 1.0001, cache_threshold = 0.5.

#include <algorithm>
#include <string>

#include "route_helpers.hpp"

namespace {

using namespace inflight::routes;

struct state {
  double balance_abs_threshold = 32.0;
  double balance_rel_threshold = 1.0001;
  double cache_threshold = 0.5;
};

inflight_route_status create(const inflight_route_setting* settings, std::size_t num_settings, void** out_state,
                             char* error, std::size_t capacity) {
  state s;
  for (std::size_t i = 0; i < num_settings; ++i) {
    const std::string key = settings[i].key;
    double* target = key == "balance_abs_threshold"   ? &s.balance_abs_threshold
                     : key == "balance_rel_threshold" ? &s.balance_rel_threshold
                     : key == "cache_threshold"       ? &s.cache_threshold
                                                      : nullptr;
    if (target == nullptr) return fail(error, capacity, "prefix: unknown setting '" + key + "'");
    if (!parse_non_negative(settings[i].value, *target))
      return fail(error, capacity, "prefix: " + key + " must be a number >= 0, got '" + settings[i].value + "'");
  }
  if (s.cache_threshold > 1.0) return fail(error, capacity, "prefix: cache_threshold must be in [0, 1]");
  *out_state = new state(s);
  return INFLIGHT_ROUTE_OK;
}

void destroy(void* s) { delete static_cast<state*>(s); }

bool is_imbalanced(const state& st, const inflight_route_view* view) {
  bool any = false;
  std::int64_t lo = 0, hi = 0;
  for (std::size_t i = 0; i < view->num_engines; ++i) {
    const auto& e = view->engines[i];
    if (!e.is_available) continue;
    const auto load = std::int64_t(e.num_waiting) + std::int64_t(e.num_running);
    lo = any ? std::min(lo, load) : load;
    hi = any ? std::max(hi, load) : load;
    any = true;
  }
  return double(hi - lo) > st.balance_abs_threshold && double(hi) > st.balance_rel_threshold * double(lo);
}

inflight_route_status choose(void* s, const inflight_route_view* view, std::uint32_t* out_index) {
  const auto& st = *static_cast<state*>(s);
  const auto* least = least_loaded(view);
  if (least == nullptr) return INFLIGHT_ROUTE_ERROR;
  *out_index = least->index;
  if (is_imbalanced(st, view) || view->request.num_prompt_blocks <= 0) return INFLIGHT_ROUTE_OK;
  const inflight_route_engine* best = nullptr;
  for (std::size_t i = 0; i < view->num_engines; ++i) {
    const auto& e = view->engines[i];
    if (!e.is_available) continue;
    if (best == nullptr || e.num_cached_blocks > best->num_cached_blocks ||
        (e.num_cached_blocks == best->num_cached_blocks && less_loaded(e, *best)))
      best = &e;
  }
  const double match = double(best->num_cached_blocks) / double(view->request.num_prompt_blocks);
  if (best->num_cached_blocks > 0 && match >= st.cache_threshold) *out_index = best->index;
  return INFLIGHT_ROUTE_OK;
}

const inflight_route_vtable vtable = {INFLIGHT_ROUTE_ABI_VERSION, "prefix", create, destroy, choose};

}  // namespace

extern "C" INFLIGHT_ROUTE_EXPORT const inflight_route_vtable* inflight_route_entry(void) { return &vtable; }
