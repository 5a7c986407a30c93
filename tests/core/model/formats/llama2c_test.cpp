#include <catch2/catch.hpp>

#include <array>

#include <fstream>
#include <random>

#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/llama2c.hpp"
#include "tests/shared_data.hpp"
#include "tests/test_shapes.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

fs::path write_temp(const std::string& name, const std::string& bytes) {
  auto p = fs::temp_directory_path() / name;
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return p;
}

model_config small_config(bool tied, int kv_heads) {
  auto c = test::small_config({.dim = 16, .hidden = 40, .kv_heads = kv_heads, .vocab = 32, .max_seq_len = 8});
  c.tied_embeddings = tied;
  return c;
}

}  // namespace

TEST_CASE("stories260K loads with the header's shape", "[llama2c]") {
  const auto path = inflight::test::shared_file("models/stories260K/stories260K.bin");
  if (path.empty()) return;
  auto w = load_llama2c(path);
  REQUIRE(w.has_value());
  const auto& c = w->config;
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.num_layers == 5);
  CHECK(c.num_heads == 8);
  CHECK(c.num_kv_heads == 4);
  CHECK(c.vocab_size == 512);
  CHECK(c.max_seq_len == 512);
  CHECK(c.tied_embeddings);
  CHECK((w->layers[4].wk.rows() == 32 && w->layers[4].wk.cols() == 64));
  CHECK(llama2c_file_size(c) == std::int64_t(fs::file_size(path)));
}

TEST_CASE("write then load gives the same weights: shared and separate classifier, GQA", "[llama2c]") {
  for (bool tied : {true, false}) {
    for (int kv_heads : {4, 2, 1}) {
      auto w = make_dummy_weights(small_config(tied, kv_heads), 7);
      REQUIRE(w.has_value());
      const auto path = fs::temp_directory_path() / "inflight-llama2c-roundtrip.bin";
      REQUIRE(write_llama2c(*w, path).has_value());
      auto back = load_llama2c(path);
      REQUIRE(back.has_value());
      CHECK(back->config.tied_embeddings == tied);
      CHECK(back->config.num_kv_heads == kv_heads);
      CHECK(back->token_embedding == w->token_embedding);
      CHECK(back->classifier == w->classifier);
      CHECK(back->layers[1].w_down == w->layers[1].w_down);
      CHECK(back->layers[0].wv == w->layers[0].wv);
      CHECK(back->final_norm == w->final_norm);
      fs::remove(path);
    }
  }
}

TEST_CASE("truncated, padded or garbage checkpoints are clear errors", "[llama2c]") {
  const auto path = inflight::test::shared_file("models/stories260K/stories260K.bin");
  if (path.empty()) return;
  const auto bytes = read_all(path);
  for (std::size_t size : {std::size_t(0), std::size_t(10), std::size_t(28), bytes.size() / 2, bytes.size() - 4}) {
    auto r = load_llama2c(write_temp("inflight-truncated.bin", bytes.substr(0, size)));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::corrupt_file);
  }
  auto padded = load_llama2c(write_temp("inflight-padded.bin", bytes + "xx"));
  REQUIRE_FALSE(padded.has_value());
  CHECK_THAT(padded.error().message, Catch::Contains("truncated or corrupt"));
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) {
    std::string garbage(28 + rng() % 200, '\0');
    for (auto& c : garbage) c = char(rng());
    CHECK_FALSE(load_llama2c(write_temp("inflight-garbage.bin", garbage)).has_value());
  }
  auto missing = load_llama2c("/nonexistent/x.bin");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == errc::io_error);
}

TEST_CASE("header values whose weights overflow int64 bytes are a clear error", "[llama2c]") {
  // Each value within its range, but dim 2^20 x hidden 2^20 x 2^20 layers needs > 2^63 bytes.
  const std::array<std::int32_t, 7> huge{1 << 20, 1 << 20, 1 << 20, 1 << 10, 1 << 10, 1 << 20, 1 << 20};
  const std::string header(reinterpret_cast<const char*>(huge.data()), sizeof huge);
  auto r = load_llama2c(write_temp("inflight-huge.bin", header));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == errc::corrupt_file);
  CHECK_THAT(r.error().message, Catch::Contains("2^63"));
}
