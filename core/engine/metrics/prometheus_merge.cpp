#include "core/engine/metrics/prometheus_merge.hpp"

#include <cstdlib>
#include <optional>
#include <unordered_map>

namespace inflight {
namespace {

struct family {
  std::vector<std::string> header;   ///< HELP and TYPE
  std::vector<std::string> samples;
};

struct merged {
  std::vector<std::string> order;
  std::unordered_map<std::string, family> families;

  family& get(const std::string& name, bool& is_new) {
    auto [it, inserted] = families.try_emplace(name);
    if (inserted) order.push_back(name);
    is_new = inserted;
    return it->second;
  }
};


/// The metric name of a sample line: up to '{' or a space.
std::string_view sample_name(std::string_view line) {
  const auto end = line.find_first_of("{ ");
  return line.substr(0, end);
}

/// A histogram's or summary's sample belongs to the family declared before it.
bool is_part_of(std::string_view sample, std::string_view family) {
  if (sample == family) return true;
  if (!sample.starts_with(family)) return false;
  const auto suffix = sample.substr(family.size());
  return suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_total" || suffix == "_created";
}

void merge_page(merged& out, const metrics_page& page) {
  std::string current;               // the family of the last HELP / TYPE line
  bool is_current_new = false;       // first seen in this page: its header lines are kept
  std::string_view text = page.text;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const auto rest = line.substr(7);
      const std::string name(rest.substr(0, rest.find(' ')));
      if (name != current) {
        current = name;
        (void)out.get(name, is_current_new);
      }
      if (is_current_new) out.families[name].header.emplace_back(line);
      continue;
    }
    if (line.starts_with('#')) continue;
    const auto name = sample_name(line);
    std::string key = is_part_of(name, current) ? current : std::string(name);
    bool is_new = false;
    family& f = out.get(key, is_new);
    f.samples.push_back(page.label_name.empty() ? std::string(line)
                                                : add_label(line, page.label_name, page.label_value));
  }
}

}  // namespace

std::string add_label(std::string_view sample, std::string_view name, std::string_view value) {
  const std::string label = std::string(name) + "=\"" + escape_label_value(value) + "\"";
  const auto at = sample.find_first_of("{ ");
  if (at == std::string_view::npos) return std::string(sample);  // not a sample line
  if (sample[at] == '{') {
    const bool is_empty = at + 1 < sample.size() && sample[at + 1] == '}';
    return std::string(sample.substr(0, at + 1)) + label + (is_empty ? "" : ",") + std::string(sample.substr(at + 1));
  }
  return std::string(sample.substr(0, at)) + "{" + label + "}" + std::string(sample.substr(at));
}

namespace {

/// The value of label `label` in a sample's `{...}`; none when it lacks it.
std::optional<std::string> label_value(std::string_view labels, std::string_view label) {
  std::size_t at = 0;
  while (at < labels.size()) {
    const auto eq = labels.find('=', at);
    if (eq == std::string_view::npos || eq + 1 >= labels.size() || labels[eq + 1] != '"') return std::nullopt;
    const auto key = labels.substr(at, eq - at);
    std::string value;
    std::size_t i = eq + 2;
    for (; i < labels.size() && labels[i] != '"'; ++i) {
      if (labels[i] == '\\' && i + 1 < labels.size()) ++i;
      value += labels[i];
    }
    if (key == label) return value;
    at = i + 1;
    if (at < labels.size() && labels[at] == ',') ++at;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, double> sum_by_label(std::string_view text, std::string_view name, std::string_view label) {
  std::map<std::string, double> out;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != '{') continue;
    const auto close = line.rfind('}');
    if (close == std::string_view::npos) continue;
    const auto value = label_value(line.substr(name.size() + 1, close - name.size() - 1), label);
    if (!value) continue;
    out[*value] += std::strtod(std::string(line.substr(close + 1)).c_str(), nullptr);
  }
  return out;
}

std::string merge_metrics_pages(const std::vector<metrics_page>& pages) {
  merged m;
  for (const auto& page : pages) merge_page(m, page);
  std::string out;
  for (const auto& name : m.order) {
    const auto& f = m.families.at(name);
    for (const auto& line : f.header) out += line + "\n";
    for (const auto& line : f.samples) out += line + "\n";
  }
  return out;
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace inflight
