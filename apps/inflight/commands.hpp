#pragma once
// Each subcommand registers itself on the CLI. A command that fails prints a clear
// message and throws CLI::RuntimeError(code), which CLI11 turns into the exit code.

#include <CLI/CLI.hpp>

#include <string>

namespace inflight::app {

void add_commands(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_bench_forward_command(CLI::App& bench);
void add_bench_offline_command(CLI::App& bench);
void add_bench_serve_command(CLI::App& bench);
void add_plan_command(CLI::App& app);

/// Prints "inflight: <message>" on stderr and ends the command with exit code 1.
[[noreturn]] void fail(const std::string& message);

}  // namespace inflight::app
