#pragma once
// Shared pieces of the built-in routing policies (C++ only). A third-party routing
// policy needs only inflight_route.h; this header is not installed.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "inflight_route.h"

namespace inflight::routes {

inline inflight_route_status fail(char* error, std::size_t capacity, const std::string& message) {
  if (error != nullptr && capacity > 0) std::snprintf(error, capacity, "%s", message.c_str());
  return INFLIGHT_ROUTE_ERROR;
}

/// Parses a number setting that must not be negative.
inline bool parse_non_negative(const char* text, double& out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value >= 0.0)) return false;
  out = value;
  return true;
}

/// `a` is a better pick than `b` by load: lower load (4 x waiting + running), then
/// fewer requests routed so far (spreads ties), then the lower index.
inline bool less_loaded(const inflight_route_engine& a, const inflight_route_engine& b) {
  const auto la = inflight_route_load(&a), lb = inflight_route_load(&b);
  if (la != lb) return la < lb;
  if (a.num_routed != b.num_routed) return a.num_routed < b.num_routed;
  return a.index < b.index;
}

/// The least-loaded available engine (the view always has one).
inline const inflight_route_engine* least_loaded(const inflight_route_view* view) {
  const inflight_route_engine* best = nullptr;
  for (std::size_t i = 0; i < view->num_engines; ++i) {
    const auto& e = view->engines[i];
    if (e.is_available && (best == nullptr || less_loaded(e, *best))) best = &e;
  }
  return best;
}

}  // namespace inflight::routes
