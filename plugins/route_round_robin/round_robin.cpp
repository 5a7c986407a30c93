// round_robin: each request to the next available engine in turn, whatever their load
// or cache. The baseline the other routing policies are measured against.

#include <string>

#include "route_helpers.hpp"

namespace {

using namespace inflight::routes;

struct state {
  std::size_t next = 0;
};

inflight_route_status create(const inflight_route_setting* settings, std::size_t num_settings, void** out_state,
                             char* error, std::size_t capacity) {
  if (num_settings > 0)
    return fail(error, capacity, std::string("round_robin takes no settings, got '") + settings[0].key + "'");
  *out_state = new state;
  return INFLIGHT_ROUTE_OK;
}

void destroy(void* s) { delete static_cast<state*>(s); }

inflight_route_status choose(void* s, const inflight_route_view* view, std::uint32_t* out_index) {
  auto& st = *static_cast<state*>(s);
  for (std::size_t tried = 0; tried < view->num_engines; ++tried) {
    const auto& e = view->engines[(st.next + tried) % view->num_engines];
    if (!e.is_available) continue;
    st.next = (st.next + tried + 1) % view->num_engines;
    *out_index = e.index;
    return INFLIGHT_ROUTE_OK;
  }
  return INFLIGHT_ROUTE_ERROR;
}

const inflight_route_vtable vtable = {INFLIGHT_ROUTE_ABI_VERSION, "round_robin", create, destroy, choose};

}  // namespace

extern "C" INFLIGHT_ROUTE_EXPORT const inflight_route_vtable* inflight_route_entry(void) { return &vtable; }
