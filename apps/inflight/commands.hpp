#pragma once
// Each subcommand registers itself on the CLI. A command that fails prints a clear
// message and throws CLI::RuntimeError(code), which CLI11 turns into the exit code.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/config/deployment.hpp"
#include "core/route/route_policy.hpp"

namespace inflight::app {

void add_commands(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_bench_forward_command(CLI::App& bench);
void add_bench_offline_command(CLI::App& bench);
void add_bench_serve_command(CLI::App& bench);
void add_bench_grammar_command(CLI::App& bench);
void add_bench_profile_command(CLI::App& bench);
void add_plan_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_simulate_command(CLI::App& app);

/// Bytes per value of a weight dtype (its block bytes over its block values); an
/// unknown name ends the command, naming `option`.
double value_bytes(const std::string& name, const char* option);

/// The deployment of `config_path` (defaults when empty) with `--set` overrides
/// applied; a bad file or override ends the command with its message.
/// Hub names (hf:...) in it are fetched and replaced by local paths (fetch_hub_models_or_fail).
deployment load_deployment_or_fail(const std::string& config_path, const std::vector<std::string>& overrides);

/// model.path and speculative.draft_model given as hf: names fetched into the Hugging Face
/// cache and replaced by their local paths (apps/inflight/hub_models.hpp); an error ends
/// the command. Commands that set a path of their own (--model) call it again.
void fetch_hub_models_or_fail(deployment& d);

/// Points the deployment's model at random weights of a named shape (bench-20M, ...); an
/// unknown name ends the command.
void use_named_shape(deployment& d, const std::string& shape);

/// `--route-setting key=value` options (serve's router, simulate's replicas) as a routing
/// policy's settings; a malformed one ends the command.
route_settings parse_route_settings(const std::vector<std::string>& texts);

/// Option checks for numbers, stricter than CLI11's own (which let "nan" through): a
/// finite number > 0 (`allow_inf`: or "inf", e.g. a request rate of all at once), and a
/// finite number >= 0. CLI11 names the option in the message.
CLI::Validator positive_number(bool allow_inf = false);
CLI::Validator non_negative_number();

/// Prints "inflight: <message>" on stderr and ends the command with exit code 1.
[[noreturn]] void fail(const std::string& message);

}  // namespace inflight::app
