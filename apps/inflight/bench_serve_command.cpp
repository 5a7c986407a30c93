// `inflight bench serve`: a serving benchmark client for any OpenAI-compatible server
// (SSE) or inflight's WebSocket, with the conventions of `vllm bench serve`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "apps/inflight/bench_engines.hpp"
#include "apps/inflight/bench_plot.hpp"
#include "apps/inflight/bench_report.hpp"
#include "apps/inflight/bench_serve_runner.hpp"
#include "apps/inflight/bench_structured.hpp"
#include "apps/inflight/commands.hpp"
#include "core/bench/arrival.hpp"
#include "core/bench/structured_workload.hpp"

namespace inflight::app {
namespace {

struct serve_options {
  std::string url = "http://127.0.0.1:8000";
  bool use_ws = false;
  std::string model;
  std::vector<std::string> lora_modules;
  int llamacpp_loras = 0;
  std::string dataset = "random";
  std::string dataset_path;
  std::string workload;
  std::string size = "small";
  int cap = 0;
  int num_prompts = 0;   // 0 = 1000 for random, the workload's own count otherwise
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;
  int vocab_size = 259;
  std::string prompt_format = "ids";
  double request_rate = INFINITY;
  double burstiness = 1.0;
  int max_concurrency = 0;
  std::uint64_t seed = 0;
  bool ignore_eos = false;
  double timeout_s = 600.0;
  std::string percentiles = "50,90,99";
  std::vector<std::string> goodput;
  std::string sweep;
  std::string result_json;
  std::string plot_dir;
  bool allow_failures = false;  // exit 0 although a run lost requests
};

bench::prompt_format format_of(const serve_options& o) {
  if (o.prompt_format == "ids") return bench::prompt_format::ids;
  if (o.prompt_format == "text") return bench::prompt_format::text;
  fail("--prompt-format must be ids or text");
}

/// The prompts, and the random stream as their draw left it: the arrival times come from
/// there, as in `bench offline` and `simulate`, so that the same seed gives the three
/// the same requests at the same times.
struct drawn_prompts {
  std::vector<bench::bench_prompt> prompts;
  std::mt19937_64 rng;
};

drawn_prompts load_prompts(const serve_options& o) {
  std::mt19937_64 rng(o.seed);
  result<std::vector<bench::bench_prompt>> prompts = make_error(errc::invalid_argument, "unknown dataset '" + o.dataset + "'");
  if (!o.workload.empty()) {
    auto size = bench::parse_workload_size(o.size);
    if (!size) fail(size.error().message);
    prompts = bench::workload_dataset({o.workload, *size, o.cap, o.num_prompts, o.vocab_size, format_of(o)}, rng);
  } else if (!o.dataset_path.empty() || o.dataset == "jsonl") {
    if (o.dataset_path.empty()) fail("--dataset jsonl needs --dataset-path FILE");
    // Text prompts pass as they are: the server tokenizes them.
    prompts = bench::load_trace(o.dataset_path, o.num_prompts, o.vocab_size, format_of(o), false, rng);
  } else if (o.dataset == "random") {
    bench::random_options r;
    r.num_prompts = o.num_prompts > 0 ? o.num_prompts : 1000;
    r.input_len = o.input_len;
    r.output_len = o.output_len;
    r.range_ratio = o.range_ratio;
    r.vocab_size = o.vocab_size;
    r.format = format_of(o);
    prompts = bench::random_dataset(r, rng);
  }
  if (!prompts) fail(prompts.error().message);
  return {std::move(*prompts), rng};
}

/// Send times: the arrival process at a finite rate; otherwise the workload's own
/// schedule (interference, prefix-chat) or all at once.
std::vector<double> send_times(const std::vector<bench::bench_prompt>& prompts, double rate, double burstiness,
                               std::mt19937_64 rng) {
  auto t = bench::arrival_times(int(prompts.size()), {rate, burstiness}, rng);
  if (!t) fail(t.error().message);
  if (std::isinf(rate)) {
    for (std::size_t i = 0; i < prompts.size(); ++i) (*t)[i] = std::max(0.0, prompts[i].arrival_s);
  }
  return std::move(*t);
}

struct sweep_spec {
  std::string name;             ///< "" (no sweep), request-rate, concurrency
  std::vector<double> values;
};

sweep_spec parse_sweep(const std::string& text) {
  sweep_spec s;
  if (text.empty()) return s;
  const auto eq = text.find('=');
  if (eq == std::string::npos) fail("--sweep: expected request-rate=1,2,4 or concurrency=1,2,4");
  s.name = text.substr(0, eq);
  if (s.name != "request-rate" && s.name != "concurrency") fail("--sweep: sweeps request-rate or concurrency");
  std::stringstream in(text.substr(eq + 1));
  for (std::string item; std::getline(in, item, ',');) {
    try {
      s.values.push_back(item == "inf" ? INFINITY : std::stod(item));
    } catch (const std::exception&) {
      fail("--sweep: '" + item + "' is not a number");
    }
    if (!(s.values.back() > 0)) fail("--sweep: values must be positive");
  }
  if (s.values.empty()) fail("--sweep: no values");
  return s;
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return m.median;
}

void print_sweep_table(const sweep_spec& sweep, const std::vector<plot_run>& runs, double p_hi) {
  char hi[16];
  std::snprintf(hi, sizeof hi, "p%g", p_hi);
  std::printf("\n%-14s %6s %7s %7s %6s %6s %8s %11s %10s %6s %-3s %10s %6s %-3s %10s %6s %-3s %9s\n",
              sweep.name.c_str(), "done", "refused", "timeout", "shed", "failed", "req/s", "out tok/s", "TTFT p50", "TTFT", hi, "TPOT p50", "TPOT", hi, "E2EL p50", "E2EL", hi, "goodput");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& s = runs[i].summary;
    std::printf("%-14g %6d %7d %7d %6d %6d %8.2f %11.1f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %9s\n",
                sweep.values[i], s.num_completed, s.num_refused, s.num_timed_out, s.num_shed,
                s.num_cancelled + s.num_other_failed(), s.request_throughput, s.output_throughput, s.ttft_ms.median, pct(s.ttft_ms, p_hi), s.tpot_ms.median,
                pct(s.tpot_ms, p_hi), s.e2el_ms.median, pct(s.e2el_ms, p_hi),
                s.goodput ? std::to_string(*s.goodput).substr(0, 6).c_str() : "-");
  }
  std::printf("(latencies in ms; req/s, out tok/s and latencies count completed requests only)\n");
}

/// A histogram's observations between two scrapes of /metrics; empty when either
/// scrape failed or the server does not export it (a server other than inflight).
histogram_counts observed_between(const result<std::string>& before, const result<std::string>& after,
                                  const std::string& name) {
  if (!before || !after) return {};
  auto b = parse_histogram(*before, name), a = parse_histogram(*after, name);
  if (!a || !b) return {};
  auto d = difference(*a, *b);
  return d ? *d : histogram_counts{};
}

/// The structured workload: a constrained run (response_format json_schema), then the
/// same prompts unconstrained with the lengths it produced. Mask and compile times are
/// the server's (inflight's /metrics, read around the constrained run and the warm-up
/// before it: a request per schema, then one untimed unconstrained pass).
void run_structured_serve(client_target target, const drawn_prompts& drawn, const serve_options& o,
                          const std::vector<double>& percentiles) {
  const auto& prompts = drawn.prompts;
  serve_run_options ro;
  ro.max_concurrency = o.max_concurrency;
  ro.default_output_len = o.output_len;
  ro.send_times_s = send_times(prompts, o.request_rate, o.burstiness, drawn.rng);
  ro.label = "constrained";
  target.keep_text = true;
  const auto before = http_get(target, "/metrics");
  // One short request per distinct schema first, so that compiles (a server's one-time
  // cost per schema) are not inside the timed run; they are in the compile figures.
  std::vector<bench::bench_prompt> warm_up;
  for (const auto& p : prompts) {
    if (std::none_of(warm_up.begin(), warm_up.end(), [&](const auto& w) { return w.json_schema == p.json_schema; })) {
      warm_up.push_back(p);
      warm_up.back().output_len = 1;
    }
  }
  serve_run_options wo;
  wo.send_times_s.assign(warm_up.size(), 0.0);
  wo.max_concurrency = 1;
  wo.label = "compiling";
  for (const auto& r : run_serving(target, warm_up, wo).records) {
    if (!r.is_success) std::fprintf(stderr, "structured: a warm-up request failed: %s\n", r.error.c_str());
  }
  // And one untimed unconstrained pass: a fresh server's first run pays first touches
  // (KV pages, buffers) that would otherwise fall on the constrained run alone.
  ro.label = "warm-up";
  run_serving(target, matched_unconstrained(prompts, {}), ro);
  ro.label = "constrained";
  auto constrained = run_serving(target, prompts, ro);
  const auto after = http_get(target, "/metrics");
  target.keep_text = false;
  ro.label = "unconstrained";
  auto plain = run_serving(target, matched_unconstrained(prompts, constrained.records), ro);
  structured_pair p{"serve", bench::summarize(constrained.records, constrained.duration_s, percentiles, {}),
                    bench::summarize(plain.records, plain.duration_s, percentiles, {}),
                    check_outputs(constrained.records, true),
                    observed_between(before, after, "inflight:grammar_mask_seconds")};
  const auto compile = observed_between(before, after, "inflight:grammar_compile_seconds");
  print_summary(stdout, "Constrained (response_format json_schema)", p.constrained);
  print_summary(stdout, "Unconstrained (the same token counts)", p.unconstrained);
  for (const auto* s : {&p.constrained, &p.unconstrained}) {
    if (s->num_failed > 0) std::fprintf(stderr, "structured: %s\n", failure_line(*s).c_str());
  }
  std::printf("\nstructured: %zu requests, %zu JSON Schemas in rotation\n", prompts.size(), bench::builtin_schemas().size());
  std::printf("compile (server, cache misses, with the token index): %llu compiles, p50 %.3f ms, p99 %.3f ms "
              "(bucket estimates), mean %.3f ms\n",
              (unsigned long long)compile.count, compile.quantile(0.5) * 1e3, compile.quantile(0.99) * 1e3,
              compile.mean() * 1e3);
  print_structured_table(stdout, {p});
  if (!o.result_json.empty()) {
    nlohmann::json records = nlohmann::json::array();
    for (const auto& r : constrained.records) records.push_back(to_json(r));
    auto doc = to_json(p);
    doc["compile_seconds"] = to_json(compile);
    doc["requests"] = std::move(records);
    write_json_file(o.result_json, doc);
  }
  if (p.constrained.num_completed == 0) fail("structured: no constrained request succeeded");
  if (p.outputs.num_unparsable > 0) fail("structured: " + std::to_string(p.outputs.num_unparsable) + " outputs are not JSON although not cut by length");
  check_every_request_completed("bench serve", {{"constrained", p.constrained}, {"unconstrained", p.unconstrained}},
                                o.allow_failures);
}

void run_bench_serve(const serve_options& o) {
  auto target = parse_url(o.url);
  if (!target) fail(target.error().message);
  target->use_ws = o.use_ws || o.url.starts_with("ws://");
  target->model = o.model;
  target->lora_modules = o.lora_modules;
  target->llamacpp_loras = o.llamacpp_loras;
  target->ignore_eos = o.ignore_eos;
  target->timeout_s = o.timeout_s;
  auto percentiles = bench::parse_percentiles(o.percentiles);
  if (!percentiles) fail(percentiles.error().message);
  std::string slo_text;
  for (const auto& g : o.goodput) slo_text += g + " ";
  auto objectives = bench::parse_slo(slo_text);
  if (!objectives) fail(objectives.error().message);
  if (!o.plot_dir.empty()) {
    if (auto ok = check_gnuplot(); !ok) fail(ok.error().message);
  }
  const auto sweep = parse_sweep(o.sweep);
  const auto drawn = load_prompts(o);
  const auto& prompts = drawn.prompts;
  if (o.workload == "structured") {
    if (!sweep.name.empty()) fail("--sweep does not apply to the structured workload");
    return run_structured_serve(*target, drawn, o, *percentiles);
  }
  const std::vector<double> steps = sweep.name.empty() ? std::vector<double>{0.0} : sweep.values;
  std::vector<plot_run> runs;
  nlohmann::json doc = {{"url", o.url}, {"protocol", target->use_ws ? "ws" : "sse"}, {"num_prompts", prompts.size()},
                        {"seed", o.seed}, {"sweep", sweep.name}, {"runs", nlohmann::json::array()}};
  for (double value : steps) {
    double rate = o.request_rate;
    serve_run_options ro;
    ro.max_concurrency = o.max_concurrency;
    ro.default_output_len = o.output_len;
    ro.label = "bench serve";
    if (sweep.name == "request-rate") rate = value, ro.label = "rate=" + std::to_string(value).substr(0, 6);
    if (sweep.name == "concurrency") ro.max_concurrency = int(value), ro.label = "concurrency=" + std::to_string(int(value));
    ro.send_times_s = send_times(prompts, rate, o.burstiness, drawn.rng);
    const auto before = http_get(*target, "/metrics");
    auto run = run_serving(*target, prompts, ro);
    const auto after = http_get(*target, "/metrics");
    auto summary = bench::summarize(run.records, run.duration_s, *percentiles, *objectives);
    print_summary(stdout, sweep.name.empty() ? "Serving Benchmark Result" : ro.label, summary);
    // What each engine computed (exact, from its own counters; behind a router, per engine).
    const auto engines = before && after ? engine_work_between(*before, *after) : std::vector<engine_work>{};
    print_engine_work(stdout, engines);
    if (summary.num_failed > 0) std::fprintf(stderr, "%s: %s\n", ro.label.c_str(), failure_line(summary).c_str());
    nlohmann::json records = nlohmann::json::array();
    for (const auto& r : run.records) records.push_back(to_json(r));
    doc["runs"].push_back({{"label", ro.label}, {"request_rate", std::isinf(rate) ? -1.0 : rate},
                           {"max_concurrency", ro.max_concurrency}, {"summary", to_json(summary)},
                           {"engines", to_json(engines)}, {"requests", records}});
    runs.push_back({ro.label, std::move(run.records), summary});
  }
  if (!sweep.name.empty()) print_sweep_table(sweep, runs, percentiles->back());
  if (!o.result_json.empty()) {
    if (runs.size() == 1) doc["summary"] = doc["runs"][0]["summary"];
    write_json_file(o.result_json, doc);
  }
  if (!o.plot_dir.empty()) {
    if (auto ok = render_plots(o.plot_dir, runs, !sweep.name.empty()); !ok) fail(ok.error().message);
    std::fprintf(stderr, "plots written to %s\n", o.plot_dir.c_str());
  }
  std::vector<labelled_summary> verdict;
  for (const auto& r : runs) verdict.push_back({r.label, r.summary});
  check_every_request_completed("bench serve", verdict, o.allow_failures);
}

}  // namespace

void add_bench_serve_command(CLI::App& bench) {
  auto o = std::make_shared<serve_options>();
  auto* cmd = bench.add_subcommand("serve", "Benchmark a running OpenAI-compatible server (SSE) or inflight's WebSocket");
  cmd->add_option("--url", o->url, "server base URL")->capture_default_str();
  cmd->add_flag("--ws", o->use_ws, "use inflight's WebSocket protocol (/v1/ws) instead of SSE");
  cmd->add_option("--model", o->model, "model name sent with each request");
  cmd->add_option("--lora-modules", o->lora_modules, "LoRA adapters by name: the requests' model field takes them in turn")
      ->delimiter(',');
  cmd->add_option("--llamacpp-loras", o->llamacpp_loras,
                  "llama.cpp's server with N adapters (--lora ... --lora-init-without-apply): the requests apply "
                  "adapter 0, 1, ... N-1 in turn (its per-request \"lora\" field)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--dataset", o->dataset, "random | jsonl")->capture_default_str();
  cmd->add_option("--dataset-path", o->dataset_path, "JSONL file: {\"prompt\": text or [ids], \"output_len\": N}");
  cmd->add_option("--workload", o->workload, "a named workload: variance | latency | procurement | interference | prefix | prefix-chat | structured");
  cmd->add_option("--size", o->size, "workload size: small | full")->capture_default_str();
  cmd->add_option("--cap", o->cap, "variance: output length cap");
  cmd->add_option("--num-prompts", o->num_prompts, "requests (random: 1000; workloads: their own count)")
      ->check(positive_number());
  cmd->add_option("--input-len", o->input_len, "random: prompt tokens")->capture_default_str();
  cmd->add_option("--output-len", o->output_len, "random: output tokens (also the default max_tokens)")->capture_default_str();
  cmd->add_option("--range-ratio", o->range_ratio, "random: lengths uniform in [L(1-r), L(1+r)]")->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "token ids are drawn below this")->capture_default_str();
  cmd->add_option("--prompt-format", o->prompt_format, "ids (token-id lists) | text (random words)")->capture_default_str();
  cmd->add_option("--request-rate", o->request_rate, "requests per second (inf = all at once)")
      ->check(positive_number(true));
  cmd->add_option("--burstiness", o->burstiness, "gamma shape of the arrival gaps (1 = Poisson)")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "most requests in flight (0 = unlimited)")
      ->check(non_negative_number());
  cmd->add_option("--seed", o->seed, "dataset and arrival seed")->capture_default_str();
  cmd->add_flag("--ignore-eos", o->ignore_eos, "ask the server to generate exactly max_tokens");
  cmd->add_option("--timeout", o->timeout_s, "per-request timeout in seconds")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--percentiles", o->percentiles, "percentiles to report")->capture_default_str();
  cmd->add_option("--goodput", o->goodput, "SLOs in ms, e.g. --goodput ttft:500 tpot:50 e2el:2000")->expected(1, 3);
  cmd->add_option("--sweep", o->sweep, "request-rate=1,2,4,8 or concurrency=1,2,4,...");
  cmd->add_option("--result-json", o->result_json, "write every request and the summary to this file");
  cmd->add_option("--plot", o->plot_dir, "render PNG charts into this folder (needs gnuplot)");
  add_allow_failures_flag(*cmd, o->allow_failures);
  cmd->callback([o] { run_bench_serve(*o); });
}

}  // namespace inflight::app
