#include <catch2/catch.hpp>

#include "hub/hub_select.hpp"

using namespace inflight;
using namespace inflight::hub;

namespace {

hub_name name_of(const char* spec) {
  auto n = try_parse_hub_name(spec);
  REQUIRE(n);
  return *n;
}

const std::vector<std::string> gguf_repo = {
    ".gitattributes",           "README.md",
    "Model-Q4_K_M.gguf",        "Model-Q8_0.gguf",
    "Model-UD-Q4_K_XL.gguf",    "Model-Q4_K_S.gguf",
    "mmproj-Model-Q8_0.gguf",   "Model-F16-00001-of-00002.gguf",
    "Model-F16-00002-of-00002.gguf", "BF16/Model-BF16-00001-of-00003.gguf",
    "BF16/Model-BF16-00002-of-00003.gguf", "BF16/Model-BF16-00003-of-00003.gguf"};

}  // namespace

TEST_CASE("hub files: a quantization picks its GGUF file, never the vision projector", "[hub]") {
  auto q8 = try_select_files(name_of("hf:o/r:Q8_0"), gguf_repo);
  REQUIRE(q8);
  CHECK(q8->files == std::vector<std::string>{"Model-Q8_0.gguf"});
  CHECK(q8->model_file == "Model-Q8_0.gguf");
  auto lower = try_select_files(name_of("hf:o/r:q4_k_s"), gguf_repo);
  REQUIRE(lower);
  CHECK(lower->model_file == "Model-Q4_K_S.gguf");
  // Q4_K does not match Q4_K_M or Q4_K_S: a tag is a whole word.
  auto q4k = try_select_files(name_of("hf:o/r:Q4_K"), gguf_repo);
  REQUIRE_FALSE(q4k);
  CHECK(q4k.error().code == errc::not_found);
  CHECK(q4k.error().message.find("Model-Q4_K_M.gguf") != std::string::npos);  // what there is
  CHECK(q4k.error().message.find("mmproj") == std::string::npos);
}

TEST_CASE("hub files: a split GGUF file comes with every part, the model path its first", "[hub]") {
  auto f16 = try_select_files(name_of("hf:o/r:F16"), gguf_repo);
  REQUIRE(f16);
  CHECK(f16->files == std::vector<std::string>{"Model-F16-00001-of-00002.gguf", "Model-F16-00002-of-00002.gguf"});
  CHECK(f16->model_file == "Model-F16-00001-of-00002.gguf");
  auto bf16 = try_select_files(name_of("hf:o/r:BF16"), gguf_repo);  // the tag as a folder name
  REQUIRE(bf16);
  CHECK(bf16->files.size() == 3);
  CHECK(bf16->model_file == "BF16/Model-BF16-00001-of-00003.gguf");
  // Naming a later part takes the whole file too.
  auto part2 = try_select_files(name_of("hf:o/r/BF16/Model-BF16-00002-of-00003.gguf"), gguf_repo);
  REQUIRE(part2);
  CHECK(part2->model_file == "BF16/Model-BF16-00001-of-00003.gguf");
  CHECK(part2->files.size() == 3);
  std::vector<std::string> missing = {"M-00001-of-00002.gguf"};
  auto broken = try_select_files(name_of("hf:o/r/M-00001-of-00002.gguf"), missing);
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message.find("M-00002-of-00002.gguf") != std::string::npos);
}

TEST_CASE("hub files: a GGUF repository named alone serves Q4_K_M, or says to choose", "[hub]") {
  auto plain = try_select_files(name_of("hf:o/r"), gguf_repo);
  REQUIRE(plain);
  CHECK(plain->model_file == "Model-Q4_K_M.gguf");
  std::vector<std::string> no_default = {"a-Q8_0.gguf", "a-Q6_K.gguf", "README.md"};
  auto ambiguous = try_select_files(name_of("hf:o/r"), no_default);
  REQUIRE_FALSE(ambiguous);
  CHECK(ambiguous.error().message.find("hf:o/r:QUANT") != std::string::npos);
  std::vector<std::string> one = {"only-Q6_K.gguf", "mmproj-f16.gguf"};
  auto single = try_select_files(name_of("hf:o/r"), one);
  REQUIRE(single);
  CHECK(single->model_file == "only-Q6_K.gguf");
}

TEST_CASE("hub files: a Hugging Face folder takes config, safetensors and tokenizer files, not other weights", "[hub]") {
  std::vector<std::string> repo = {"config.json", "generation_config.json", "model-00001-of-00002.safetensors",
                                   "model-00002-of-00002.safetensors", "model.safetensors.index.json", "tokenizer.json",
                                   "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                                   "chat_template.jinja", "pytorch_model.bin", "original/consolidated.00.pth",
                                   "original/params.json", "onnx/model.onnx", "1_Pooling/config.json", "modules.json",
                                   "README.md", ".gitattributes", "model-Q4_K_M.gguf", "merges.txt", "vocab.json"};
  auto s = try_select_files(name_of("hf:o/r"), repo);
  REQUIRE(s);
  CHECK(s->model_file.empty());
  const std::vector<std::string> want = {"1_Pooling/config.json", "chat_template.jinja", "config.json",
                                         "generation_config.json", "merges.txt", "model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                         "modules.json", "special_tokens_map.json", "tokenizer.json", "tokenizer.model",
                                         "tokenizer_config.json", "vocab.json"};
  CHECK(s->files == want);
  // A quantization still picks the GGUF file beside the folder.
  auto q = try_select_files(name_of("hf:o/r:Q4_K_M"), repo);
  REQUIRE(q);
  CHECK(q->model_file == "model-Q4_K_M.gguf");
  std::vector<std::string> bins_only = {"config.json", "pytorch_model.bin"};
  auto old = try_select_files(name_of("hf:o/r"), bins_only);
  REQUIRE_FALSE(old);
  CHECK(old.error().code == errc::unsupported);
  auto nothing = try_select_files(name_of("hf:o/r"), std::vector<std::string>{"README.md"});
  REQUIRE_FALSE(nothing);
  CHECK(nothing.error().code == errc::not_found);
  auto no_file = try_select_files(name_of("hf:o/r/nope.gguf"), repo);
  REQUIRE_FALSE(no_file);
  CHECK(no_file.error().message.find("nope.gguf") != std::string::npos);
}

TEST_CASE("hub files: a PEFT adapter repository takes its adapter_config.json and weights", "[hub][lora]") {
  std::vector<std::string> repo = {"adapter_config.json", "adapter_model.safetensors", "README.md", ".gitattributes",
                                   "adapter_model.bin", "training_args.bin", "tokenizer_config.json"};
  auto s = try_select_files(name_of("hf:o/sql-lora"), repo);
  REQUIRE(s);
  CHECK(s->model_file.empty());  // the folder itself
  CHECK(s->files == std::vector<std::string>{"adapter_config.json", "adapter_model.safetensors", "tokenizer_config.json"});
  // Without its weights in safetensors it is nothing inflight reads.
  auto bins = try_select_files(name_of("hf:o/sql-lora"), std::vector<std::string>{"adapter_config.json", "adapter_model.bin"});
  REQUIRE_FALSE(bins);
  CHECK_THAT(bins.error().message, Catch::Contains("PEFT adapter"));
}
