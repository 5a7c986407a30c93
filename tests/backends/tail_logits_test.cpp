// Tail logits (perplexity's rows) on the cpu backend: a step that asks for the logits of
// its last tokens returns, row for row, what a sampled step ending at each of those
// tokens computes.
#include <catch2/catch.hpp>

#include <memory>

#include "backends/cpu_backend.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/model_loader.hpp"

using namespace inflight;

namespace {

std::shared_ptr<const model_weights> small_model() {
  dummy_shape shape;
  shape.hidden_size = 64;
  shape.intermediate_size = 96;
  shape.num_layers = 2;
  shape.num_heads = 4;
  shape.num_kv_heads = 2;
  shape.vocab_size = 300;
  shape.max_position = 128;
  auto w = make_dummy_weights(dummy_model_config(shape), 5);
  REQUIRE(w.has_value());
  return std::make_shared<const model_weights>(std::move(*w));
}

seq_step prefix_step(const std::vector<token_id>& tokens, int length) {
  seq_step s;
  s.id = 1;
  s.tokens.assign(tokens.begin(), tokens.begin() + length);
  s.block_table = {0, 1};
  return s;
}

}  // namespace

TEST_CASE("tail logits are the rows sampled steps compute at each of those tokens", "[backend]") {
  const auto w = small_model();
  auto be = cpu_backend::create(w, kv_cache_config{16, 4, 0});
  REQUIRE(be.has_value());
  std::vector<token_id> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back(token_id((i * 41 + 7) % 290 + 3));
  const std::size_t vocab = 300;

  step_plan tail;
  tail.seqs.push_back(prefix_step(tokens, 20));
  tail.seqs.back().num_tail_logits = 3;
  auto rows = (*be)->forward(tail);
  REQUIRE(rows.has_value());
  REQUIRE(rows->size() == 3 * vocab);
  const std::vector<float> all(rows->begin(), rows->end());
  for (int k = 0; k < 3; ++k) {
    step_plan sampled;
    sampled.seqs.push_back(prefix_step(tokens, 18 + k));
    sampled.seqs.back().do_sample = true;
    auto one = (*be)->forward(sampled);
    REQUIRE(one.has_value());
    REQUIRE(one->size() == vocab);
    for (std::size_t v = 0; v < vocab; ++v) {
      if (all[std::size_t(k) * vocab + v] != (*one)[v]) REQUIRE(all[std::size_t(k) * vocab + v] == (*one)[v]);
    }
  }

  // Asking for more tail rows than tokens, tail rows with sampling, or tail rows from
  // execute() (which samples) is refused.
  tail.seqs.back().num_tail_logits = 21;
  CHECK((*be)->forward(tail).error().code == errc::invalid_argument);
  tail.seqs.back().num_tail_logits = 2;
  tail.seqs.back().do_sample = true;
  CHECK((*be)->forward(tail).error().code == errc::invalid_argument);
  tail.seqs.back().do_sample = false;
  CHECK((*be)->execute(tail).error().code == errc::invalid_argument);
}
