#pragma once
// PNG charts of serving runs, drawn by gnuplot: latency CDFs of every run and, for
// sweeps, throughput against latency.

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/bench/bench_metrics.hpp"

namespace inflight::app {

struct plot_run {
  std::string label;                            ///< e.g. "rate=4" or "concurrency=8"
  std::vector<bench::request_record> records;
  bench::bench_summary summary;
};

/// Ok when a gnuplot executable is on PATH; otherwise an error that says how to get one.
result<void> check_gnuplot();

/// Writes the data files and the script into `dir` and runs gnuplot on it.
result<void> render_plots(const std::string& dir, const std::vector<plot_run>& runs, bool is_sweep);

}  // namespace inflight::app
