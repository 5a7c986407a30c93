#pragma once
/// What a benchmark says about where it ran: the CPU's model name and the time, for the
/// origin of a step profile (core/sim/step_profile.hpp).

#include <string>

namespace inflight::app {

/// The CPU's model name from /proc/cpuinfo ("unknown" when there is none).
std::string cpu_model_name();
/// Now, in UTC, ISO 8601 (2026-11-26T21:53:42Z).
std::string utc_now();

}  // namespace inflight::app
