// --set overrides: the deployment is validated once, after the file and every override.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
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

TEST_CASE("default.toml lists every key with its default", "[config]") {
  std::ifstream in(std::filesystem::path(INFLIGHT_SOURCE_DIR) / "config" / "default.toml");
  REQUIRE(in.good());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& entry : known_keys()) {
    const std::string key = entry.substr(0, entry.find(' '));
    const auto dot = key.rfind('.');
    const std::string section = "\n[" + key.substr(0, dot) + "]";
    const std::string leaf = "\n" + key.substr(dot + 1) + " = ";
    INFO(key);
    const auto begin = text.find(section);
    REQUIRE(begin != std::string::npos);
    const auto end = text.find("\n[", begin + 1);
    const auto at = text.find(leaf, begin);
    CHECK((at != std::string::npos && at < end));
  }
  // And the file is exactly the defaults.
  auto d = load_deployment(std::filesystem::path(INFLIGHT_SOURCE_DIR) / "config" / "default.toml");
  REQUIRE(d.has_value());
  const deployment defaults;
  CHECK(d->server.max_waiting_tokens == defaults.server.max_waiting_tokens);
  CHECK(d->server.max_queue_time_s == defaults.server.max_queue_time_s);
  CHECK(d->server.max_header_bytes == defaults.server.max_header_bytes);
  CHECK(d->server.max_stream_buffer_bytes == defaults.server.max_stream_buffer_bytes);
  CHECK(d->server.linger_s == defaults.server.linger_s);
  CHECK(d->server.retry_after_s == defaults.server.retry_after_s);
  CHECK(d->engine.unhealthy_after_failed_steps == defaults.engine.unhealthy_after_failed_steps);
  CHECK(d->engine.cuda_weights == defaults.engine.cuda_weights);
  CHECK(d->debug.fail_step == 0);
  CHECK(d->debug.step_delay_s == 0.0);
  CHECK(d->embeddings.enabled == defaults.embeddings.enabled);
  CHECK(d->embeddings.pooling == defaults.embeddings.pooling);
  CHECK(d->embeddings.normalize == defaults.embeddings.normalize);
  CHECK(d->embeddings.matryoshka == defaults.embeddings.matryoshka);
  CHECK(d->embeddings.query_prefix == defaults.embeddings.query_prefix);
  CHECK(d->embeddings.append_eos == defaults.embeddings.append_eos);
  CHECK(d->embeddings.max_inputs == defaults.embeddings.max_inputs);
  CHECK(d->embeddings.max_input_tokens == defaults.embeddings.max_input_tokens);
}

TEST_CASE("engine.cuda_weights takes expand, file or fp8", "[config]") {
  const deployment defaults;
  CHECK(defaults.engine.cuda_weights == "expand");
  const std::vector<std::string> file = {"engine.cuda_weights=file"};
  auto f = load_deployment({}, file);
  REQUIRE(f.has_value());
  CHECK(f->engine.cuda_weights == "file");
  const std::vector<std::string> fp8 = {"engine.cuda_weights=fp8"};
  auto e = load_deployment({}, fp8);
  REQUIRE(e.has_value());
  CHECK(e->engine.cuda_weights == "fp8");
  const std::vector<std::string> bad = {"engine.cuda_weights=blocks"};
  auto b = load_deployment({}, bad);
  REQUIRE_FALSE(b.has_value());
  CHECK_THAT(b.error().message, Catch::Contains("engine.cuda_weights"));
}
