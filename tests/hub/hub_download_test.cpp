#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <thread>

#include "hub/hub_cache.hpp"
#include "hub/hub_download.hpp"
#include "hub/hub_http.hpp"
#include "tests/hub/fake_hub.hpp"

using namespace inflight;
using namespace inflight::hub;
using inflight::test::fake_hub;
using inflight::test::random_bytes;
using inflight::test::read_file;
using inflight::test::temp_dir;
using inflight::test::write_file;
namespace fs = std::filesystem;

namespace {

/// A Hub with one GGUF repository (org/tiny-GGUF: two quantizations and a README) and
/// one Hugging Face folder (org/tiny-hf), and an empty cache.
struct hub_fixture {
  temp_dir repos, cache;
  std::string q8 = random_bytes(300000, 1), q4 = random_bytes(200000, 2);
  std::string weights = random_bytes(50000, 3);
  hub_fixture() {
    write_file(repos.path / "org/tiny-GGUF/tiny-Q8_0.gguf", q8);
    write_file(repos.path / "org/tiny-GGUF/tiny-Q4_K_M.gguf", q4);
    write_file(repos.path / "org/tiny-GGUF/README.md", "# tiny\n");
    write_file(repos.path / "org/tiny-hf/config.json", R"({"architectures": ["LlamaForCausalLM"]})");
    write_file(repos.path / "org/tiny-hf/model.safetensors", weights);
    write_file(repos.path / "org/tiny-hf/tokenizer.json", R"({"model": {}})");
    write_file(repos.path / "org/tiny-hf/pytorch_model.bin", random_bytes(40000, 4));
  }
  hub_options options(const fake_hub& hub) const {
    hub_options o;
    o.endpoint = hub.endpoint();
    o.cache_dir = cache.path;
    o.retry_delay_s = 0.05;
    o.max_attempts = 3;
    return o;
  }
};

hub_name name_of(const char* spec) {
  auto n = try_parse_hub_name(spec);
  REQUIRE(n);
  return *n;
}

/// The fake Hub's record: bytes of files served, and each file request.
nlohmann::json stats_of(const fake_hub& hub) {
  http_request req;
  req.url = hub.endpoint() + "/_stats";
  auto r = try_http(req);
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return nlohmann::json::parse(r->body);
}

int num_gets_of(const nlohmann::json& stats, const std::string& file) {
  int n = 0;
  for (const auto& r : stats["requests"])
    if (r["file"] == file && r["method"] == "GET") ++n;
  return n;
}

std::string sha256_of(const std::string& bytes, const fs::path& scratch) {
  write_file(scratch, bytes);
  auto s = try_sha256_file(scratch);
  REQUIRE(s);
  return *s;
}

}  // namespace

TEST_CASE("hub: a quantization lands in the Hugging Face cache layout, and the second fetch downloads nothing", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path);
  auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
  REQUIRE(m);
  CHECK(m->files == std::vector<std::string>{"tiny-Q8_0.gguf"});
  CHECK(m->num_downloaded_files == 1);
  CHECK(m->num_downloaded_bytes == std::int64_t(f.q8.size()));
  CHECK_FALSE(m->is_cache_only);
  CHECK(read_file(m->path) == f.q8);
  // models--org--tiny-GGUF/snapshots/<commit>/tiny-Q8_0.gguf -> ../../blobs/<sha256>, refs/main = <commit>
  repo_cache cache(f.cache.path, "org/tiny-GGUF");
  const auto sha = sha256_of(f.q8, f.cache.path / "scratch");
  CHECK(m->path == cache.pointer(m->commit, "tiny-Q8_0.gguf"));
  CHECK(fs::is_symlink(m->path));
  CHECK(fs::read_symlink(m->path) == fs::path("../../blobs/" + sha));
  CHECK(read_file(cache.folder() / "refs" / "main") == m->commit);
  CHECK(fs::exists(cache.blob(sha)));
  CHECK_FALSE(fs::exists(cache.incomplete(sha)));
  CHECK_FALSE(fs::exists(cache.pointer(m->commit, "tiny-Q4_K_M.gguf")));  // only what the name needs
  const auto served = stats_of(hub)["bytes_served"].get<std::int64_t>();
  CHECK(served == std::int64_t(f.q8.size()));

  auto again = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
  REQUIRE(again);
  CHECK(again->path == m->path);
  CHECK(again->num_downloaded_files == 0);
  CHECK(stats_of(hub)["bytes_served"].get<std::int64_t>() == served);
  CHECK(num_gets_of(stats_of(hub), "org/tiny-GGUF/tiny-Q8_0.gguf") == 1);
}

TEST_CASE("hub: a download that breaks off resumes where it stopped, in the same run and in the next", "[hub]") {
  hub_fixture f;
  SECTION("the connection drops half way") {
    fake_hub hub(f.repos.path, {"--drop-once", "org/tiny-GGUF/tiny-Q8_0.gguf"});
    auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
    REQUIRE(m);
    CHECK(read_file(m->path) == f.q8);
    const auto stats = stats_of(hub);
    CHECK(stats["bytes_served"].get<std::int64_t>() == std::int64_t(f.q8.size()));  // no byte twice
    REQUIRE(num_gets_of(stats, "org/tiny-GGUF/tiny-Q8_0.gguf") == 2);
    CHECK(stats["requests"][1]["range"] == "bytes=" + std::to_string(f.q8.size() / 2) + "-");
  }
  SECTION("a part left by an earlier run") {
    fake_hub hub(f.repos.path);
    repo_cache cache(f.cache.path, "org/tiny-GGUF");
    const auto sha = sha256_of(f.q8, f.cache.path / "scratch");
    write_file(cache.incomplete(sha), f.q8.substr(0, 1000));
    auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
    REQUIRE(m);
    CHECK(read_file(m->path) == f.q8);
    const auto stats = stats_of(hub);
    CHECK(stats["bytes_served"].get<std::int64_t>() == std::int64_t(f.q8.size() - 1000));
    CHECK(stats["requests"][0]["range"] == "bytes=1000-");
  }
}

TEST_CASE("hub: bytes that do not match their SHA-256 are deleted and are an error", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path, {"--corrupt", "org/tiny-GGUF/tiny-Q8_0.gguf"});
  auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
  REQUIRE_FALSE(m);
  CHECK(m.error().code == errc::corrupt_file);
  CHECK(m.error().message.find("tiny-Q8_0.gguf") != std::string::npos);
  CHECK(m.error().message.find("SHA-256") != std::string::npos);
  repo_cache cache(f.cache.path, "org/tiny-GGUF");
  const auto sha = sha256_of(f.q8, f.cache.path / "scratch");
  CHECK_FALSE(fs::exists(cache.blob(sha)));
  CHECK_FALSE(fs::exists(cache.incomplete(sha)));
  CHECK_FALSE(fs::exists(cache.folder() / "refs" / "main"));
}

TEST_CASE("hub: a gated repository answers 401 until a token is given", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path, {"--gated", "org/tiny-GGUF"});
  auto denied = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub));
  REQUIRE_FALSE(denied);
  CHECK(denied.error().code == errc::invalid_argument);
  CHECK(denied.error().message.find("org/tiny-GGUF") != std::string::npos);
  CHECK(denied.error().message.find("gated") != std::string::npos);
  CHECK(denied.error().message.find("HF_TOKEN") != std::string::npos);
  auto o = f.options(hub);
  o.token = "hf_wrong";
  auto wrong = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message.find("the token given has no access") != std::string::npos);
  o.token = "hf_fake_token";
  auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE(m);
  CHECK(read_file(m->path) == f.q8);
}

TEST_CASE("hub: an unknown repository, revision or quantization is an error naming it", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path);
  auto repo = try_fetch(name_of("hf:org/nope"), f.options(hub));
  REQUIRE_FALSE(repo);
  CHECK(repo.error().code == errc::not_found);
  CHECK(repo.error().message.find("no repository org/nope") != std::string::npos);
  auto rev = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0@v9"), f.options(hub));
  REQUIRE_FALSE(rev);
  CHECK(rev.error().code == errc::not_found);
  CHECK(rev.error().message.find("no revision 'v9'") != std::string::npos);
  auto quant = try_fetch(name_of("hf:org/tiny-GGUF:Q2_K"), f.options(hub));
  REQUIRE_FALSE(quant);
  CHECK(quant.error().message.find("tiny-Q4_K_M.gguf") != std::string::npos);
  CHECK(stats_of(hub)["bytes_served"] == 0);
}

TEST_CASE("hub: offline, or with the Hub out of reach, the cache alone answers", "[hub]") {
  hub_fixture f;
  auto hub = std::make_unique<fake_hub>(f.repos.path);
  auto o = f.options(*hub);
  o.is_offline = true;
  auto cold = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE_FALSE(cold);
  CHECK(cold.error().code == errc::not_found);
  CHECK(cold.error().message.find("offline") != std::string::npos);
  CHECK(stats_of(*hub)["requests"].empty());  // offline asks nothing

  o.is_offline = false;
  auto m = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE(m);
  hub->stop();  // out of reach from here on
  o.is_offline = true;
  auto offline = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE(offline);
  CHECK(offline->path == m->path);
  CHECK(offline->is_cache_only);
  o.is_offline = false;
  auto unreachable = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), o);
  REQUIRE(unreachable);
  CHECK(unreachable->path == m->path);
  CHECK(unreachable->is_cache_only);
  // What the cache lacks is an error; out of reach, it says the Hub is unavailable.
  auto other = try_fetch(name_of("hf:org/tiny-GGUF:Q4_K_M"), o);
  REQUIRE_FALSE(other);
  CHECK(other.error().code == errc::unavailable);
  CHECK(other.error().message.find("cannot reach") != std::string::npos);
  auto never = try_fetch(name_of("hf:org/tiny-hf"), o);
  REQUIRE_FALSE(never);
  CHECK(never.error().code == errc::unavailable);
}

TEST_CASE("hub: a Hugging Face folder brings the files the loader reads, not other weights", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path);
  auto m = try_fetch(name_of("hf:org/tiny-hf"), f.options(hub));
  REQUIRE(m);
  CHECK(m->path == repo_cache(f.cache.path, "org/tiny-hf").snapshot(m->commit));
  CHECK(m->files == std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"});
  CHECK(read_file(m->path / "model.safetensors") == f.weights);
  CHECK_FALSE(fs::exists(m->path / "pytorch_model.bin"));
  CHECK(m->num_downloaded_files == 3);
  // The small files are not LFS: their blob is named by the git blob id the ETag states.
  CHECK(fs::read_symlink(m->path / "config.json").filename().string().size() == 40);
}

TEST_CASE("hub: two fetches of one file at once download it once", "[hub]") {
  hub_fixture f;
  fake_hub hub(f.repos.path);
  std::vector<result<fetched_model>> results(3, make_error(errc::internal, "not run"));
  std::vector<std::thread> threads;
  for (auto& r : results)
    threads.emplace_back([&r, &f, &hub] { r = try_fetch(name_of("hf:org/tiny-GGUF:Q8_0"), f.options(hub)); });
  for (auto& t : threads) t.join();
  for (auto& r : results) {
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r);
    CHECK(read_file(r->path) == f.q8);
  }
  CHECK(stats_of(hub)["bytes_served"].get<std::int64_t>() == std::int64_t(f.q8.size()));
}
