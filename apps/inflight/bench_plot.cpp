#include "apps/inflight/bench_plot.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace inflight::app {
namespace fs = std::filesystem;

result<void> check_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const auto exe = fs::path(dir.empty() ? "." : dir) / "gnuplot";
    if (::access(exe.c_str(), X_OK) == 0) return {};
  }
  return make_error(errc::not_found, "--plot needs gnuplot, which is not on PATH (Debian: apt-get install gnuplot-nox)");
}

namespace {

using metric_fn = std::function<void(const bench::request_record&, std::vector<double>&)>;

struct metric {
  const char* name;
  const char* title;
  metric_fn values;  // in milliseconds
};

std::vector<metric> metrics() {
  return {{"ttft", "Time to first token", [](const auto& r, auto& v) { v.push_back(r.ttft_s * 1e3); }},
          {"tpot", "Time per output token", [](const auto& r, auto& v) { if (r.output_tokens > 1) v.push_back(r.tpot_s() * 1e3); }},
          {"itl", "Inter-token latency", [](const auto& r, auto& v) { for (double g : r.itl_s) v.push_back(g * 1e3); }},
          {"e2el", "End-to-end latency", [](const auto& r, auto& v) { v.push_back(r.e2el_s * 1e3); }}};
}

/// One CDF data file per run and metric: value (ms), fraction of values <= it.
result<void> write_cdf(const fs::path& file, const metric& m, const plot_run& run) {
  std::vector<double> v;
  for (const auto& r : run.records) if (r.is_success) m.values(r, v);
  std::sort(v.begin(), v.end());
  std::ofstream out(file);
  if (!out) return make_error(errc::io_error, "cannot write " + file.string());
  for (std::size_t i = 0; i < v.size(); ++i) out << v[i] << " " << double(i + 1) / double(v.size()) << "\n";
  if (v.empty()) out << "0 0\n";
  return {};
}

double pct(const bench::metric_stats& m, double p) {
  for (const auto& [q, v] : m.percentiles) if (q == p) return v;
  return m.median;
}

void sweep_plot(std::ostream& gp, const fs::path& dir, const char* name, const char* title, int col50, int col99) {
  gp << "set output '" << (dir / (std::string("throughput_vs_") + name + ".png")).string() << "'\n"
     << "set title 'Output throughput vs " << title << "'\nset xlabel 'output tokens/s'\nset ylabel '" << title
     << " (ms)'\nunset logscale\nset key top left\n"
     << "plot '" << (dir / "sweep.dat").string() << "' using 2:" << col50
     << " with linespoints title 'p50', '' using 2:" << col99 << " with linespoints title 'p99', '' using 2:" << col99
     << ":1 with labels offset 1,1 notitle\n";
}

}  // namespace

result<void> render_plots(const std::string& dir_text, const std::vector<plot_run>& runs, bool is_sweep) {
  if (auto ok = check_gnuplot(); !ok) return ok;
  const fs::path dir(dir_text);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(errc::io_error, "cannot create " + dir.string() + ": " + ec.message());
  std::ofstream gp(dir / "plots.gp");
  gp << "set terminal png size 960,600\nset grid\n";
  for (const auto& m : metrics()) {
    std::string plot;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto file = dir / (std::string(m.name) + "_cdf_" + std::to_string(i) + ".dat");
      if (auto ok = write_cdf(file, m, runs[i]); !ok) return ok;
      plot.append(plot.empty() ? "plot '" : ", '").append(file.string());
      plot.append("' using 1:2 with lines title '").append(runs[i].label).append("'");
    }
    gp << "set output '" << (dir / (std::string(m.name) + "_cdf.png")).string() << "'\n"
       << "set title '" << m.title << " (CDF)'\nset xlabel 'ms'\nset ylabel 'fraction of "
       << (std::string(m.name) == "itl" ? "gaps" : "requests") << "'\nset key bottom right\nset logscale x\n"
       << plot << "\nunset logscale x\n";
  }
  if (is_sweep) {
    std::ofstream data(dir / "sweep.dat");
    data << "# label out_tok_s ttft_p50 ttft_p99 tpot_p50 tpot_p99 e2el_p50 e2el_p99\n";
    for (const auto& r : runs) {
      const auto& s = r.summary;
      data << '"' << r.label << "\" " << s.output_throughput << " " << s.ttft_ms.median << " " << pct(s.ttft_ms, 99)
           << " " << s.tpot_ms.median << " " << pct(s.tpot_ms, 99) << " " << s.e2el_ms.median << " "
           << pct(s.e2el_ms, 99) << "\n";
    }
    sweep_plot(gp, dir, "tpot", "TPOT", 5, 6);
    sweep_plot(gp, dir, "ttft", "TTFT", 3, 4);
    sweep_plot(gp, dir, "e2el", "E2EL", 7, 8);
  }
  gp.close();
  const std::string command = "gnuplot '" + (dir / "plots.gp").string() + "'";
  if (std::system(command.c_str()) != 0) return make_error(errc::io_error, "gnuplot failed on " + (dir / "plots.gp").string());
  return {};
}

}  // namespace inflight::app
