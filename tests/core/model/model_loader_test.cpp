#include <catch2/catch.hpp>

#include "core/model/model_loader.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;

TEST_CASE("no model path means dummy weights with a byte tokenizer, announced as such", "[model_loader]") {
  model_settings s;
  s.dummy.hidden_size = 64;
  s.dummy.intermediate_size = 128;
  s.dummy.num_layers = 2;
  s.dummy.num_heads = 4;
  s.dummy.num_kv_heads = 2;
  auto m = load_model(s);
  REQUIRE(m.has_value());
  CHECK(m->format == "dummy");
  CHECK(m->name == "dummy");
  CHECK_THAT(m->description, Catch::Contains("DUMMY"));
  CHECK(m->weights->config.dim == 64);
  CHECK(m->weights->config.head_dim == 16);
  CHECK(m->tok->encode("hi", true) == std::vector<token_id>{1, 'h' + 3, 'i' + 3});
  CHECK(m->max_context == 2048);
}

TEST_CASE("dummy weights with a given tokenizer check its vocabulary against the shape", "[model_loader]") {
  const auto tok = inflight::test::shared_file("models/llama2c-tokenizer-32k/tokenizer.bin");
  if (tok.empty()) return;
  model_settings s;
  s.format = "dummy";
  s.tokenizer = tok.string();
  s.dummy.hidden_size = 32;
  s.dummy.intermediate_size = 64;
  s.dummy.num_layers = 1;
  s.dummy.num_heads = 2;
  s.dummy.num_kv_heads = 2;
  s.dummy.vocab_size = 512;
  auto small = load_model(s);
  REQUIRE_FALSE(small.has_value());
  CHECK_THAT(small.error().message, Catch::Contains("vocab_size"));
  s.dummy.vocab_size = 32000;
  auto ok = load_model(s);
  REQUIRE(ok.has_value());
  CHECK(ok->tok->vocab_size() == 32000);
}

TEST_CASE("a llama2.c checkpoint is found by format auto, with its tokenizer and BOS/EOS as stops", "[model_loader]") {
  const auto bin = inflight::test::shared_file("models/stories260K/stories260K.bin");
  if (bin.empty()) return;
  model_settings s;
  s.path = bin.string();
  s.tokenizer = inflight::test::shared_file("models/stories260K/tok512.bin").string();
  s.max_context = 100;
  auto m = load_model(s);
  REQUIRE(m.has_value());
  CHECK(m->format == "llama2c");
  CHECK(m->name == "stories260K");
  CHECK(m->max_context == 100);
  CHECK(m->eos_ids == std::vector<token_id>{2, 1});
  CHECK_FALSE(m->chat.has_value());
}

TEST_CASE("load errors are clear", "[model_loader]") {
  model_settings s;
  s.path = "/nonexistent/model.bin";
  auto missing = load_model(s);
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("/nonexistent/model.bin"));
  model_settings bad_template;
  bad_template.dummy.num_layers = 1;
  bad_template.chat_template = "no-such-family";
  auto t = load_model(bad_template);
  REQUIRE_FALSE(t.has_value());
  CHECK_THAT(t.error().message, Catch::Contains("model.chat_template"));
}
