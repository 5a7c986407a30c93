// stories260K exported as a Hugging Face folder (half-rope layout, safetensors) must
// generate exactly what the llama2.c checkpoint generates.
#include <fstream>
#include <sstream>

#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "tests/actors/engine/engine_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

std::string greedy_text(const deployment& d, const std::string& prompt, int max_tokens) {
  auto eng = start_engine(d);
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng->submit(greedy_request(*eng, prompt, max_tokens), sink).has_value());
  REQUIRE(sink->wait());
  return sink->text();
}

}  // namespace

TEST_CASE("a model folder written from stories260K generates the reference text", "[engine][hf]") {
  const auto bin = shared_file("models/stories260K/stories260K.bin");
  const auto reference = shared_file("models/stories260K/reference/once_upon_a_time.n64.txt");
  if (bin.empty() || reference.empty()) return;
  auto weights = load_llama2c(bin);
  REQUIRE(weights.has_value());
  const auto folder = std::filesystem::temp_directory_path() / "inflight-stories260k-hf";
  std::filesystem::remove_all(folder);
  REQUIRE(write_hf_model_folder(*weights, folder, tensor_dtype::f32, {{2, 1}, 1}).has_value());
  CHECK(std::filesystem::exists(folder / "config.json"));
  CHECK(std::filesystem::exists(folder / "model.safetensors"));

  auto d = stories_deployment();
  d.model.path = folder.string();
  d.model.format = "auto";
  auto loaded = load_model(d.model);
  REQUIRE(loaded.has_value());
  CHECK(loaded->format == "hf");
  CHECK(loaded->weights->config.rope == rope_style::half);

  std::ifstream in(reference);
  std::stringstream ss;
  ss << in.rdbuf();
  // run.c forwards 64 positions: BOS + 4 prompt tokens, then 60 sampled ones.
  CHECK("Once upon a time" + greedy_text(d, "Once upon a time", 60) + "\n" == ss.str());
  CHECK(greedy_text(d, "The cat sat", 80) == greedy_text(stories_deployment(), "The cat sat", 80));
  std::filesystem::remove_all(folder);
}

TEST_CASE("a bf16 model folder loads and stays close to the fp32 model", "[engine][hf]") {
  const auto bin = shared_file("models/stories260K/stories260K.bin");
  if (bin.empty()) return;
  auto weights = load_llama2c(bin);
  REQUIRE(weights.has_value());
  const auto folder = std::filesystem::temp_directory_path() / "inflight-stories260k-bf16";
  std::filesystem::remove_all(folder);
  REQUIRE(write_hf_model_folder(*weights, folder, tensor_dtype::bf16, {{2, 1}, 1}).has_value());
  auto d = stories_deployment();
  d.model.path = folder.string();
  const auto bf16 = greedy_text(d, "Once upon a time", 16);
  const auto f32 = greedy_text(stories_deployment(), "Once upon a time", 16);
  // bf16 rounding may flip a near-tie late; the first words must agree.
  CHECK(bf16.substr(0, 20) == f32.substr(0, 20));
  std::filesystem::remove_all(folder);
}
