#pragma once
/// Models named on the Hugging Face Hub (hf:ORG/REPO...): fetched into the Hugging Face
/// cache before a command loads them (hub/), with a progress line on a terminal.

#include "core/config/deployment.hpp"
#include "hub/hub_download.hpp"

namespace inflight::app {

/// Replaces hf: names in model.path, lora.adapters and speculative.draft_model by the local paths of
/// their files, downloading what the cache lacks; model.name defaults to the hub name.
/// When model.fallback = "dummy" and the Hub could not be reached (nor the cache
/// answer), the deployment serves random weights instead (model.path = "").
result<void> try_resolve_hub_models(deployment& d);

/// `spec` (a hub name) fetched, with a progress line on a terminal.
result<hub::fetched_model> try_fetch_named(const std::string& spec, const std::string& token_file);

}  // namespace inflight::app
