// Renders every case that jinja2_oracle.py wrote with inflight's chat template and checks
// that it is byte-identical to jinja2's rendering, or that both fail (with the template's
// own raise_exception message where jinja2 raised one):
//   template_compare ORACLE.json [--quiet]
// Prints one line per template (cases agreeing / cases), each disagreement with the first
// differing bytes, and "N passed, N failed" over the cases; exits 1 on any disagreement.
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model/template/chat_template.hpp"

namespace {

using json = nlohmann::ordered_json;  // the context keeps the key order the oracle rendered with

struct outcome {
  bool is_ok = false;
  std::string text;  ///< the rendering, or the error message
};

outcome render_with_inflight(const json& c, std::int64_t fixed_now) {
  auto t = inflight::chat_template::try_from_jinja(c["template"].get<std::string>());
  if (!t) return {false, "parse: " + t.error().message};
  const json& context = c["context"];
  inflight::chat_input input;
  input.messages = context["messages"];
  input.tools = context["tools"];
  input.add_generation_prompt = context["add_generation_prompt"].get<bool>();
  input.bos = context["bos_token"].get<std::string>();
  input.eos = context["eos_token"].get<std::string>();
  input.fixed_now = fixed_now;
  for (auto it = context.begin(); it != context.end(); ++it) {
    static const char* const fixed[] = {"messages", "tools", "documents", "add_generation_prompt", "bos_token",
                                        "eos_token"};
    bool is_fixed = false;
    for (const char* f : fixed) is_fixed = is_fixed || it.key() == f;
    if (!is_fixed) input.extra[it.key()] = it.value();
  }
  auto text = t->try_render(input);
  if (!text) return {false, text.error().message};
  return {true, *text};
}

/// Where two texts first differ, with a little of each around it.
std::string first_difference(const std::string& want, const std::string& got) {
  std::size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const std::size_t from = i > 40 ? i - 40 : 0;
  return "at byte " + std::to_string(i) + "\n      jinja2:   " + json(want.substr(from, 120)).dump() +
         "\n      inflight: " + json(got.substr(from, 120)).dump();
}

/// "" when the two agree, else why not.
std::string disagreement(const json& c, const outcome& ours) {
  const bool want_ok = c["ok"].get<bool>();
  if (want_ok && ours.is_ok) return c["text"] == ours.text ? "" : first_difference(c["text"], ours.text);
  if (want_ok) return "jinja2 renders, inflight fails: " + ours.text;
  const std::string want_error = c["error"];
  if (ours.is_ok) return "jinja2 fails (" + want_error + "), inflight renders";
  if (c["kind"] == "raise" && ours.text.find(want_error) == std::string::npos) {
    return "both fail, but raise_exception's message \"" + want_error + "\" is not in inflight's: " + ours.text;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: template_compare ORACLE.json [--quiet]\n";
    return 2;
  }
  const bool is_quiet = argc > 2 && std::string(argv[2]) == "--quiet";
  std::ifstream in(argv[1]);
  const json oracle = json::parse(in, nullptr, false);
  if (oracle.is_discarded() || !oracle.contains("cases")) {
    std::cerr << "template_compare: cannot read " << argv[1] << "\n";
    return 2;
  }
  const std::int64_t fixed_now = oracle["fixed_now"];
  std::map<std::string, std::pair<int, int>> per_template;  // agreeing, total
  int num_passed = 0, num_failed = 0;
  for (const json& c : oracle["cases"]) {
    const std::string name = c["template_name"];
    const std::string why = disagreement(c, render_with_inflight(c, fixed_now));
    auto& [num_agree, num_total] = per_template[name];
    ++num_total;
    if (why.empty()) {
      ++num_agree;
      ++num_passed;
      continue;
    }
    ++num_failed;
    if (!is_quiet) std::cout << "DIFF " << name << " / " << c["conversation"].get<std::string>() << ": " << why << "\n";
  }
  int num_identical_templates = 0;
  for (const auto& [name, counts] : per_template) {
    std::cout << (counts.first == counts.second ? "same " : "DIFF ") << name << ": " << counts.first << "/"
              << counts.second << "\n";
    num_identical_templates += counts.first == counts.second;
  }
  std::cout << num_identical_templates << "/" << per_template.size() << " templates agree with jinja2 on every case\n";
  std::cout << num_passed << " passed, " << num_failed << " failed\n";
  return num_failed == 0 ? 0 : 1;
}
