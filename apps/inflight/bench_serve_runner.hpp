#pragma once
// Drives one serving run: releases requests at their send times, holds them while
// --max-concurrency requests are in flight, and reports progress on stderr.

#include <vector>

#include "apps/inflight/bench_client.hpp"

namespace inflight::app {

struct serve_run_options {
  std::vector<double> send_times_s;  ///< one per prompt, from the start of the run
  int max_concurrency = 0;           ///< 0 = unlimited
  int default_output_len = 128;      ///< for prompts without their own output length
  std::string label;                 ///< shown in the progress line
};

struct serve_run {
  std::vector<bench::request_record> records;  ///< in dataset order; start_s relative to the run
  double duration_s = 0.0;
};

serve_run run_serving(const client_target& target, const std::vector<bench::bench_prompt>& prompts,
                      const serve_run_options& options);

}  // namespace inflight::app
