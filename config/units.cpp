#include "config/units.hpp"

#include <cctype>
#include <cmath>
#include <map>

namespace inflight::config {

result<std::int64_t> parse_bytes(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return make_error(errc::invalid_argument, "not a size: '" + text + "'");
  }
  std::string unit = text.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::map<std::string, double> units = {
      {"", 1},       {"B", 1},       {"KB", 1e3},          {"MB", 1e6},          {"GB", 1e9},
      {"TB", 1e12},  {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  auto it = units.find(unit);
  if (it == units.end() || !std::isfinite(value) || value < 0 || value * it->second > 9e18) {
    return make_error(errc::invalid_argument, "not a size: '" + text + "' (use B, KB, MB, GB, KiB, MiB, GiB)");
  }
  return static_cast<std::int64_t>(value * it->second);
}

result<double> parse_duration(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.front() == ' ') t.erase(0, 1);
  while (!t.empty() && t.back() == ' ') t.pop_back();
  const auto bad = [&] {
    return make_error(errc::invalid_argument, "not a duration: '" + text + "' (seconds, or like \"30s\", \"5m\", \"1h\")");
  };
  if (t.empty()) return bad();
  const bool negative = t.front() == '-';
  if (negative) t.erase(0, 1);
  double total = 0;
  std::size_t i = 0;
  while (i < t.size()) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(t.substr(i), &used);
    } catch (...) {
      return bad();
    }
    if (t[i] == '+' || t[i] == '-' || !std::isfinite(value)) return bad();
    i += used;
    std::size_t j = i;
    while (j < t.size() && std::isalpha(static_cast<unsigned char>(t[j]))) ++j;
    const std::string unit = t.substr(i, j - i);
    static const std::map<std::string, double> units = {{"", 1.0}, {"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}};
    const auto it = units.find(unit);
    if (it == units.end() || (unit.empty() && (i != used || j != t.size()))) return bad();
    total += value * it->second;
    i = j;
  }
  if (negative) return -1.0;
  return total;
}

}  // namespace inflight::config
