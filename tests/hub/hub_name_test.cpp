#include <catch2/catch.hpp>

#include "hub/hub_name.hpp"

using namespace inflight;
using namespace inflight::hub;

TEST_CASE("hub names: repository, quantization, file and revision", "[hub]") {
  auto a = try_parse_hub_name("hf:Qwen/Qwen3-0.6B-GGUF:Q8_0");
  REQUIRE(a);
  CHECK(a->repo == "Qwen/Qwen3-0.6B-GGUF");
  CHECK(a->tag == "Q8_0");
  CHECK(a->file.empty());
  CHECK(a->revision == "main");
  CHECK(served_name_of(*a) == "Qwen/Qwen3-0.6B-GGUF:Q8_0");

  auto b = try_parse_hub_name("hf:org/repo/sub/dir/model-Q4_K_M.gguf@v1.0");
  REQUIRE(b);
  CHECK(b->repo == "org/repo");
  CHECK(b->file == "sub/dir/model-Q4_K_M.gguf");
  CHECK(b->revision == "v1.0");
  CHECK(to_string(*b) == "hf:org/repo/sub/dir/model-Q4_K_M.gguf@v1.0");

  auto c = try_parse_hub_name("hf://meta-llama/Llama-3.2-1B@0123456789abcdef0123456789abcdef01234567");
  REQUIRE(c);
  CHECK(c->repo == "meta-llama/Llama-3.2-1B");
  CHECK(is_commit_hash(c->revision));
  CHECK(served_name_of(*c) == "meta-llama/Llama-3.2-1B");

  auto pr = try_parse_hub_name("hf:org/repo@refs/pr/3");
  REQUIRE(pr);
  CHECK(pr->revision == "refs/pr/3");
}

TEST_CASE("hub names: malformed ones are errors that say which part", "[hub]") {
  for (const char* bad : {"org/repo", "hf:", "hf:org", "hf:org/", "hf:/repo", "hf:org/re po", "hf:org/../x",
                          "hf:org/repo/../../etc/passwd", "hf:org/repo/a//b.gguf", "hf:org/repo:", "hf:org/repo@",
                          "hf:org/repo@../main", "hf:org/repo:Q4 K", "hf:org/repo/file.gguf:Q8_0", "hf:.org/repo"}) {
    INFO(bad);
    auto n = try_parse_hub_name(bad);
    REQUIRE_FALSE(n);
    CHECK(n.error().code == errc::invalid_argument);
    CHECK(n.error().message.find(bad) != std::string::npos);
  }
  CHECK_FALSE(is_hub_name("/models/x.gguf"));
  CHECK(is_hub_name("hf:a/b"));
  CHECK_FALSE(is_commit_hash("main"));
  CHECK_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));  // the Hub's are lower case
}
