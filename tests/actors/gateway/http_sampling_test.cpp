// n choices at temperature > 0 over HTTP: each draws its own random stream.
#include <set>

#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

std::vector<std::string> choice_texts(const http_answer& a) {
  std::vector<std::string> texts;
  const json body = a.body_json();  // a range-for over a temporary's member would dangle
  for (const auto& c : body["choices"]) texts.push_back(c["text"].get<std::string>());
  return texts;
}

}  // namespace

TEST_CASE("gateway http: n = 4 sampled choices are not all equal, with or without a seed", "[gateway][http][sampling]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  json body = {{"prompt", "Once upon a time"}, {"n", 4}, {"max_tokens", 30}, {"temperature", 1.0}, {"ignore_eos", true}};
  auto unseeded = post_json(s.port, "/v1/completions", body);
  REQUIRE(unseeded.status == 200);
  const auto texts = choice_texts(unseeded);
  REQUIRE(texts.size() == 4);
  CHECK(std::set<std::string>(texts.begin(), texts.end()).size() > 1);

  body["seed"] = 5;
  auto seeded = post_json(s.port, "/v1/completions", body);
  REQUIRE(seeded.status == 200);
  const auto seeded_texts = choice_texts(seeded);
  CHECK(std::set<std::string>(seeded_texts.begin(), seeded_texts.end()).size() > 1);
  // The same seed reproduces every choice.
  CHECK(choice_texts(post_json(s.port, "/v1/completions", body)) == seeded_texts);
}
