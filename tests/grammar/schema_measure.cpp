// Compiles JSON Schema files as a request's schema is compiled and prints, per file, whether
// it was accepted, the compile time and the refusal. scripts/measure-schemas.sh runs it over
// a fixed sample of a schema collection and sums the refusals by reason.
//
//   inflight_schema_measure FILE...      (or file names on stdin when none are given)
//
// Output lines (tab-separated): FILE  accepted|refused|invalid-json  MILLISECONDS  MESSAGE
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/grammar/front_ends.hpp"

using namespace inflight;

namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

void measure(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const auto start = std::chrono::steady_clock::now();
  auto g = grammar_from_json_schema(text.str());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const char* verdict = g ? "accepted" : "refused";
  std::string message = g ? std::string() : one_line(g.error().message);
  if (!g && message == "the JSON Schema is not valid JSON") verdict = "invalid-json";
  std::printf("%s\t%s\t%.3f\t%s\n", file.c_str(), verdict, ms, message.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files(argv + 1, argv + argc);
  if (files.empty())
    for (std::string line; std::getline(std::cin, line);)
      if (!line.empty()) files.push_back(line);
  for (const auto& f : files) measure(f);
  return 0;
}
