#pragma once
/// A backend wrapped for tests and fault drills ([debug] in the deployment): it sleeps
/// before every step (so that a stream provably cannot finish within a grace period,
/// however fast the machine) and fails chosen steps (so that the engine's handling of
/// a backend failure can be tested end to end). With the default settings the engine
/// does not wrap its backend at all.

#include <memory>

#include "core/config/deployment.hpp"
#include "core/engine/step/backend.hpp"

namespace inflight {

/// True when `s` asks for anything: only then does the engine wrap its backend.
bool is_active(const debug_settings& s);

/// `inner` with the delays and failures of `s`. Steps count from 1 in execute() order.
std::unique_ptr<backend> make_debug_backend(std::unique_ptr<backend> inner, const debug_settings& s);

}  // namespace inflight
