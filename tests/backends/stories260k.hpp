// stories260K (a trained llama2.c model and its 512-token tokenizer from ../shared),
// loaded for the backend tests.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <optional>

#include "core/model/formats/llama2c.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/shared_data.hpp"

namespace inflight::test {

struct stories260k {
  std::shared_ptr<const model_weights> weights;
  std::unique_ptr<llama2c_tokenizer> tok;
};

/// None when ../shared is missing outside CI (shared_file has failed the test under CI).
inline std::optional<stories260k> load_stories260k() {
  const auto model_path = shared_file("models/stories260K/stories260K.bin");
  const auto tok_path = shared_file("models/stories260K/tok512.bin");
  if (model_path.empty() || tok_path.empty()) return std::nullopt;
  auto w = load_llama2c(model_path);
  REQUIRE(w.has_value());
  auto t = llama2c_tokenizer::load(tok_path, w->config.vocab_size);
  REQUIRE(t.has_value());
  return stories260k{std::make_shared<const model_weights>(std::move(*w)), std::move(*t)};
}

}  // namespace inflight::test
