#pragma once
/// The text of GET /v1/engine/events (docs/http-api.md): Server-Sent Events, first one
/// `engine` event describing the engine, then one `step` event per step summary (or per
/// aggregated window of steps, when the reader fell behind).

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "actors/gateway/gateway_state.hpp"
#include "core/engine/metrics/step_summary.hpp"

namespace inflight::gateway {

/// `event: engine` with the model, the policy, the token budget, KV size and the feed's
/// bounds; behind a router also `engine` (whose steps follow) and `engines` (every one
/// the router routes to, for ?engine=).
std::string engine_event_text(gateway_state& state, const std::string& engine = {});

/// `event: step` for one summary; `id:` is its last step id.
std::string step_event_text(const step_summary& step);

/// The 404 of the web UI's paths and its feed when server.enable_ui = false.
api_error ui_disabled(std::string_view path);

/// A reader of GET /v1/engine/events: 404 when the UI is off, 503 at
/// server.events_max_subscribers. Behind a router it reads the steps of one engine:
/// `engine` (the ?engine= parameter, "host:port"), by default the first configured; an
/// engine the router does not route to is a 400, as is the parameter without a router.
api_result<std::shared_ptr<step_subscription>> try_subscribe_engine_events(gateway_state& state,
                                                                           const std::optional<std::string>& engine = {});

}  // namespace inflight::gateway
