// Seeds reach the sampler: unseeded requests draw independent streams, a seed
// reproduces its tokens whatever else is batched, and different seeds differ.
#include <catch2/catch.hpp>

#include <optional>
#include <set>

#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

constexpr int num_sampled_tokens = 40;

generate_request sampled_request(const engine& eng, std::optional<std::uint64_t> seed, const std::string& prompt) {
  auto req = greedy_request(eng, prompt, num_sampled_tokens);
  req.params.temperature = 1.0f;
  req.params.ignore_eos = true;
  req.seed = seed;
  return req;
}

/// Submits every request at once (one batch where they fit) and returns their tokens.
std::vector<std::vector<token_id>> run_together(engine& eng, const std::vector<generate_request>& reqs) {
  std::vector<std::shared_ptr<collect_sink>> sinks;
  for (const auto& r : reqs) {
    auto sink = std::make_shared<collect_sink>();
    REQUIRE(eng.submit(r, sink).has_value());
    sinks.push_back(sink);
  }
  std::vector<std::vector<token_id>> out;
  for (auto& s : sinks) {
    REQUIRE(s->wait());
    REQUIRE(s->tokens().size() == num_sampled_tokens);
    out.push_back(s->tokens());
  }
  return out;
}

}  // namespace

TEST_CASE("engine sampling: unseeded requests at temperature 1 draw different tokens", "[engine][sampling]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  const auto a = run_together(*eng, {sampled_request(*eng, std::nullopt, "Once upon a time")});
  const auto b = run_together(*eng, {sampled_request(*eng, std::nullopt, "Once upon a time")});
  CHECK(a[0] != b[0]);
  const auto batch = run_together(*eng, std::vector<generate_request>(4, sampled_request(*eng, std::nullopt, "Once")));
  CHECK(std::set<std::vector<token_id>>(batch.begin(), batch.end()).size() == batch.size());
}

TEST_CASE("engine sampling: different seeds give different tokens", "[engine][sampling]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment());
  const auto one = run_together(*eng, {sampled_request(*eng, 1, "Once upon a time")});
  const auto two = run_together(*eng, {sampled_request(*eng, 2, "Once upon a time")});
  CHECK(one[0] != two[0]);
}

TEST_CASE("engine sampling: a seed gives the same tokens alone and in any batch", "[engine][sampling]") {
  if (shared_file("models/stories260K/stories260K.bin").empty()) return;
  auto eng = start_engine(stories_deployment("splitfuse", 32));
  const auto seeded = sampled_request(*eng, 1234, "Once upon a time");
  const auto alone = run_together(*eng, {seeded})[0];
  // With other seeds, unseeded neighbours and longer prompts that split the budget.
  const auto mixed = run_together(*eng, {sampled_request(*eng, 99, "The cat sat on the mat and looked at the dog"),
                                         seeded, sampled_request(*eng, std::nullopt, "Tim"),
                                         sampled_request(*eng, 1234, "A different prompt entirely")});
  CHECK(mixed[1] == alone);
  // Copies of the same request in one batch all reproduce it.
  for (const auto& copy : run_together(*eng, std::vector<generate_request>(5, seeded))) CHECK(copy == alone);
  // And a different seed in the same slot does not.
  CHECK(run_together(*eng, {sampled_request(*eng, 1235, "Once upon a time")})[0] != alone);
}
