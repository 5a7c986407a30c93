#pragma once
/// Latency targets of one request: what an SLO-aware policy (plugins/slo) plans for.
/// The engine only carries them to the policy (inflight_seq_info, ABI version 3); it
/// enforces none of them.

#include <string_view>

namespace inflight {

/// How the message of a shed request (errc::queue_timeout, HTTP 429) begins: reports
/// count them by it.
inline constexpr std::string_view shed_message = "shed by the scheduling policy";

struct slo_targets {
  double ttft_ms = 0.0;  ///< arrival -> first token; 0 = none
  double tpot_ms = 0.0;  ///< mean time per output token after the first; 0 = none

  bool has_any() const { return ttft_ms > 0.0 || tpot_ms > 0.0; }
};

/// A request's own targets where it set them, else the deployment's defaults.
inline slo_targets resolve_targets(const slo_targets& own, const slo_targets& defaults) {
  return {own.ttft_ms > 0.0 ? own.ttft_ms : defaults.ttft_ms, own.tpot_ms > 0.0 ? own.tpot_ms : defaults.tpot_ms};
}

}  // namespace inflight
