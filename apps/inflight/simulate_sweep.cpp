#include "apps/inflight/simulate_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <exception>

#include "apps/inflight/commands.hpp"

namespace inflight::app {
namespace {

double parse_number(const std::string& text, const std::string& what) {
  if (text == "inf") return INFINITY;
  std::size_t end = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end == 0 || end != text.size() || !(v > 0) || std::isnan(v)) fail(what + ": '" + text + "' is not a positive number");
  return v;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    const auto next = text.find(separator, pos);
    parts.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) return parts;
    pos = next + 1;
  }
}

int parse_count(const std::string& text, const std::string& what) {
  const double v = parse_number(text, what);
  if (v != std::floor(v) || v > 1e9) fail(what + ": '" + text + "' is not a positive whole number");
  return int(v);
}

}  // namespace

std::string sweep_key(const std::string& text) { return text.substr(0, text.find('=')); }

std::vector<sweep_point> parse_sweeps(const std::vector<std::string>& texts) {
  std::vector<sweep_point> points = {sweep_point{}};
  std::vector<std::string> seen;
  for (const auto& text : texts) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq + 1 == text.size()) fail("--sweep: expected KEY=V1,V2,..., got '" + text + "'");
    std::string key = text.substr(0, eq);
    std::replace(key.begin(), key.end(), '-', '_');
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("--sweep: '" + sweep_key(text) + "' twice");
    seen.push_back(key);
    std::vector<sweep_point> next;
    for (const auto& base : points) {
      for (const auto& value : split(text.substr(eq + 1), ',')) {
        sweep_point p = base;
        p.labels.push_back(value);
        if (key == "request_rate") p.request_rate = parse_number(value, "--sweep request-rate");
        else if (key == "max_num_batched_tokens") p.max_num_batched_tokens = parse_count(value, "--sweep " + key);
        else if (key == "max_num_seqs") p.max_num_seqs = parse_count(value, "--sweep " + key);
        else if (key == "replicas") p.replicas = parse_count(value, "--sweep replicas");
        else
          fail("--sweep: unknown key '" + sweep_key(text) +
               "' (request-rate, max_num_batched_tokens, max_num_seqs, replicas)");
        next.push_back(std::move(p));
      }
    }
    points = std::move(next);
  }
  return points;
}

std::vector<latency_target> parse_targets(const std::vector<std::string>& texts) {
  std::vector<latency_target> targets;
  for (const auto& text : texts) {
    const auto dash = text.find("-p"), eq = text.find('=');
    if (dash == std::string::npos || eq == std::string::npos || eq < dash)
      fail("--target: expected METRIC-pNN=MS (e.g. ttft-p99=1000), got '" + text + "'");
    latency_target t;
    t.text = text;
    const auto name = text.substr(0, dash);
    if (name == "ttft") t.metric = &bench::bench_summary::ttft_ms;
    else if (name == "tpot") t.metric = &bench::bench_summary::tpot_ms;
    else if (name == "itl") t.metric = &bench::bench_summary::itl_ms;
    else if (name == "e2e") t.metric = &bench::bench_summary::e2el_ms;
    else fail("--target: unknown metric '" + name + "' (ttft, tpot, itl, e2e)");
    t.percentile = parse_number(text.substr(dash + 2, eq - dash - 2), "--target's percentile");
    if (t.percentile > 100) fail("--target: percentile above 100 in '" + text + "'");
    t.limit_ms = parse_number(text.substr(eq + 1), "--target's limit (ms)");
    targets.push_back(t);
  }
  return targets;
}

}  // namespace inflight::app
