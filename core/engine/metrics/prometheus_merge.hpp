#pragma once
/// Several processes' metrics as one Prometheus text page: a router's /metrics carries
/// its own samples and, under an `engine="host:port"` label, each engine's. Prometheus'
/// text format wants each metric family once, its HELP and TYPE first and all of its
/// samples together, so the pages are merged family by family, not concatenated.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace inflight {

/// One page of metrics and the label its samples get (an empty name: none added).
struct metrics_page {
  std::string text;
  std::string label_name;
  std::string label_value;
};

/// A label value escaped for the text format: backslash, double quote and newline.
std::string escape_label_value(std::string_view value);

/// `sample` (one sample line) with `name="value"` as its first label.
std::string add_label(std::string_view sample, std::string_view name, std::string_view value);

/// The pages merged: each family once, in the order families first appear, with the
/// HELP and TYPE lines of the page it first appears in and the samples of every page
/// in page order. Blank lines and comments other than HELP and TYPE are dropped.
std::string merge_metrics_pages(const std::vector<metrics_page>& pages);

/// The samples of metric `name` in `text`, summed by the value of their label `label`
/// (samples without it are left out): e.g. a counter per engine on a router's page.
std::map<std::string, double> sum_by_label(std::string_view text, std::string_view name, std::string_view label);

}  // namespace inflight
