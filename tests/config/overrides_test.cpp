// --set overrides: the deployment is validated once, after the file and every override.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "config/deployment_loader.hpp"

using namespace inflight;
using namespace inflight::config;

namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("overrides (--set): their order does not matter", "[config]") {
  // From 8 heads over 4 KV heads to 2 over 2: the first override alone is inconsistent.
  const std::vector<std::string> forward = {"model.dummy.num_heads=2", "model.dummy.num_kv_heads=2"};
  const std::vector<std::string> reverse = {"model.dummy.num_kv_heads=2", "model.dummy.num_heads=2"};
  for (const auto& overrides : {forward, reverse}) {
    INFO(overrides.front());
    auto d = load_deployment({}, overrides);
    INFO((d ? std::string() : d.error().message));
    REQUIRE(d.has_value());
    CHECK(d->model.dummy.num_heads == 2);
    CHECK(d->model.dummy.num_kv_heads == 2);
  }
}

TEST_CASE("overrides (--set): a file that is only valid after its overrides loads", "[config]") {
  const auto path = write_temp("inflight-overrides-test.toml", "[model.dummy]\nnum_heads = 8\nnum_kv_heads = 3\n");
  CHECK_FALSE(load_deployment(path).has_value());
  const std::vector<std::string> fix = {"model.dummy.num_kv_heads=2"};
  auto d = load_deployment(path, fix);
  INFO((d ? std::string() : d.error().message));
  REQUIRE(d.has_value());
  CHECK(d->model.dummy.num_kv_heads == 2);
  std::filesystem::remove(path);
}

TEST_CASE("overrides (--set): the final deployment is still validated and errors name the keys", "[config]") {
  const std::vector<std::string> bad = {"model.dummy.num_kv_heads=2", "model.dummy.num_heads=3"};
  auto d = load_deployment({}, bad);
  REQUIRE_FALSE(d.has_value());
  CHECK_THAT(d.error().message, Catch::Contains("model.dummy.num_heads") && Catch::Contains("model.dummy.num_kv_heads"));
  const std::vector<std::string> typo = {"engine.max_num_seqz=4"};
  auto t = load_deployment({}, typo);
  REQUIRE_FALSE(t.has_value());
  CHECK_THAT(t.error().message, Catch::Contains("engine.max_num_seqz"));
  const std::vector<std::string> range = {"engine.max_num_seqs=0"};
  auto r = load_deployment({}, range);
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message, Catch::Contains("engine.max_num_seqs"));
}

