#include "apps/inflight/bench_structured.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#include "apps/inflight/bench_report.hpp"
#include "core/grammar/grammar_cache.hpp"

namespace inflight::app {

output_check check_outputs(const std::vector<bench::request_record>& records, bool has_text) {
  output_check c;
  for (const auto& r : records) {
    if (!r.is_success) continue;
    const bool is_cut = r.finish_reason == "length";
    c.num_length += is_cut;
    c.num_stop += r.finish_reason == "stop";
    if (!has_text) continue;
    ++c.num_checked;
    if (!nlohmann::json::parse(r.output_text, nullptr, false).is_discarded()) ++c.num_valid_json;
    else if (is_cut) ++c.num_cut_unparsable;
    else ++c.num_unparsable;
  }
  return c;
}

std::vector<bench::bench_prompt> matched_unconstrained(const std::vector<bench::bench_prompt>& prompts,
                                                       const std::vector<bench::request_record>& constrained) {
  std::vector<bench::bench_prompt> out = prompts;
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].json_schema.clear();
    if (i < constrained.size()) out[i].output_len = std::max(1, constrained[i].output_tokens);
  }
  return out;
}

result<compiled_schemas> compile_prompt_schemas(const std::vector<bench::bench_prompt>& prompts,
                                                const std::shared_ptr<const grammar_vocab>& vocab, int num_compiles) {
  using clock_type = std::chrono::steady_clock;
  compiled_schemas out;
  std::map<std::string, std::shared_ptr<const token_index>> by_text;
  for (const auto& p : prompts) {
    if (p.json_schema.empty()) {
      out.per_prompt.push_back(nullptr);
      continue;
    }
    auto& index = by_text[p.json_schema];
    if (!index) {
      std::shared_ptr<const grammar> g;
      for (int i = 0; i < std::max(1, num_compiles); ++i) {
        const auto t0 = clock_type::now();
        auto compiled = try_compile({grammar_kind::json_schema, p.json_schema});
        out.compile_s.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
        if (!compiled) return make_error(compiled.error().code, p.tag + ": " + compiled.error().message);
        if (!g) g = std::make_shared<const grammar>(std::move(*compiled));
      }
      const auto t0 = clock_type::now();
      auto built = std::make_shared<const token_index>(g, vocab);
      built->warm_up();
      out.index_build_s.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
      index = std::move(built);
    }
    out.per_prompt.push_back(index);
  }
  return out;
}

void print_structured_table(std::FILE* out, const std::vector<structured_pair>& pairs) {
  std::fprintf(out, "%-12s %12s %12s %7s %7s %9s %6s %6s %7s %8s %7s %9s %9s\n", "run", "constrained", "unconstr.",
               "ratio", "target", "tokens", "stop", "length", "JSON ok", "not JSON", "cut", "mask", "mask");
  std::fprintf(out, "%-12s %12s %12s %7s %7s %9s %6s %6s %7s %8s %7s %9s %9s\n", "", "out tok/s", "out tok/s", "", "",
               "", "", "", "", "", "", "mean us", "p99 us");
  for (const auto& p : pairs) {
    const double ratio = p.unconstrained.output_throughput > 0
                             ? p.constrained.output_throughput / p.unconstrained.output_throughput
                             : 0.0;
    const auto& c = p.outputs;
    auto count = [&](int n) { return c.num_checked ? std::to_string(n) : std::string("-"); };
    std::fprintf(out, "%-12s %12.1f %12.1f %6.3fx %7s %9lld %6d %6d %7s %8s %7s %9.2f %9.2f\n", p.label.c_str(),
                 p.constrained.output_throughput, p.unconstrained.output_throughput, ratio,
                 ratio >= structured_target_ratio ? "meets" : "MISSES", p.constrained.total_output_tokens, c.num_stop,
                 c.num_length, count(c.num_valid_json).c_str(), count(c.num_unparsable).c_str(),
                 count(c.num_cut_unparsable).c_str(), p.mask_seconds.mean() * 1e6, p.mask_seconds.quantile(0.99) * 1e6);
  }
  std::fprintf(out,
               "(unconstrained: the same prompts, each with max_tokens = the tokens of its constrained run; ratio = "
               "constrained / unconstrained, target >= %.2fx; stop = finished by the grammar, length = cut by "
               "max_tokens; not JSON = outputs that do not parse although not cut (must be 0), cut = outputs that do "
               "not parse, cut by length; mask: grammar_mask_seconds per constrained sequence-step, p99 interpolated "
               "in its buckets)\n",
               structured_target_ratio);
}

void print_median_ratios(std::FILE* out, const std::vector<structured_pair>& pairs, int repeat) {
  for (std::size_t first = 0; first + std::size_t(repeat) <= pairs.size(); first += std::size_t(repeat)) {
    std::vector<double> ratios;
    for (std::size_t i = first; i < first + std::size_t(repeat); ++i) {
      const auto& p = pairs[i];
      if (p.unconstrained.output_throughput > 0)
        ratios.push_back(p.constrained.output_throughput / p.unconstrained.output_throughput);
    }
    if (ratios.empty()) continue;
    std::sort(ratios.begin(), ratios.end());
    const double median = bench::percentile(ratios, 50);
    const std::string label = pairs[first].label.substr(0, pairs[first].label.rfind('#'));
    std::fprintf(out, "%s: median ratio of %d pairs %.3fx (min %.3fx, max %.3fx), target >= %.2fx: %s\n",
                 label.c_str(), repeat, median, ratios.front(), ratios.back(), structured_target_ratio,
                 median >= structured_target_ratio ? "meets" : "MISSES");
  }
}

nlohmann::json to_json(const histogram_counts& h) {
  return {{"count", h.count}, {"sum", h.sum}, {"mean", h.mean()}, {"p50", h.quantile(0.5)}, {"p99", h.quantile(0.99)},
          {"upper_bounds", h.upper_bounds}, {"counts", h.counts}};
}

nlohmann::json to_json(const structured_pair& p) {
  const auto& c = p.outputs;
  return {{"label", p.label},
          {"constrained", to_json(p.constrained)},
          {"unconstrained", to_json(p.unconstrained)},
          {"ratio", p.unconstrained.output_throughput > 0
                        ? p.constrained.output_throughput / p.unconstrained.output_throughput
                        : 0.0},
          {"finished_stop", c.num_stop},
          {"finished_length", c.num_length},
          {"checked", c.num_checked},
          {"valid_json", c.num_valid_json},
          {"unparsable", c.num_unparsable},
          {"unparsable_cut_by_length", c.num_cut_unparsable},
          {"mask_seconds", to_json(p.mask_seconds)}};
}

}  // namespace inflight::app
