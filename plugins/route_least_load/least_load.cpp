// least_load: vLLM's data-parallel balancing: the available engine with the lowest
// 4 x waiting + running (ties: fewer requests routed so far, then the lower index).

#include <string>

#include "route_helpers.hpp"

namespace {

using namespace inflight::routes;

inflight_route_status create(const inflight_route_setting* settings, std::size_t num_settings, void** out_state,
                             char* error, std::size_t capacity) {
  if (num_settings > 0)
    return fail(error, capacity, std::string("least_load takes no settings, got '") + settings[0].key + "'");
  *out_state = nullptr;
  return INFLIGHT_ROUTE_OK;
}

void destroy(void*) {}

inflight_route_status choose(void*, const inflight_route_view* view, std::uint32_t* out_index) {
  const auto* best = least_loaded(view);
  if (best == nullptr) return INFLIGHT_ROUTE_ERROR;
  *out_index = best->index;
  return INFLIGHT_ROUTE_OK;
}

const inflight_route_vtable vtable = {INFLIGHT_ROUTE_ABI_VERSION, "least_load", create, destroy, choose};

}  // namespace

extern "C" INFLIGHT_ROUTE_EXPORT const inflight_route_vtable* inflight_route_entry(void) { return &vtable; }
