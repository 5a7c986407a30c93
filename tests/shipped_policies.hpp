#pragma once
// The scheduling policies this build ships: every plugins/<name>/ added with
// inflight_add_policy. Tests that check "every policy" loop over this list, so a new
// plugin is covered without anyone editing a test.
#include <string>
#include <string_view>
#include <vector>

namespace inflight::test {

inline std::vector<std::string> shipped_policies() {
  std::vector<std::string> names;
  std::string_view text = INFLIGHT_SHIPPED_POLICIES;
  while (!text.empty()) {
    auto comma = text.find(',');
    names.emplace_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return names;
}

}  // namespace inflight::test
