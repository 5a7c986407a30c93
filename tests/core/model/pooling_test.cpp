// The last steps of an embedding (core/model/pooling.hpp): cut to `dimensions`, then
// L2-normalised; and the pooling names of the embeddings.pooling setting.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/model/pooling.hpp"

using namespace inflight;

namespace {

double norm_of(const std::vector<float>& v) {
  double s = 0;
  for (const float x : v) s += double(x) * double(x);
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("finish_embedding normalises, and cuts before it normalises", "[core][embeddings]") {
  const std::vector<float> pooled = {3.0f, 4.0f, 12.0f, 0.0f};
  const auto whole = finish_embedding(pooled, 0, true);
  REQUIRE(whole.size() == 4);
  CHECK(whole[0] == Approx(3.0 / 13.0));
  CHECK(whole[2] == Approx(12.0 / 13.0));
  CHECK(norm_of(whole) == Approx(1.0).epsilon(1e-6));
  const auto cut = finish_embedding(pooled, 2, true);  // Matryoshka: the first 2, renormalised
  REQUIRE(cut.size() == 2);
  CHECK(cut[0] == Approx(0.6));
  CHECK(cut[1] == Approx(0.8));
  CHECK(norm_of(cut) == Approx(1.0).epsilon(1e-6));
  CHECK(finish_embedding(pooled, 2, false) == std::vector<float>{3.0f, 4.0f});
  CHECK(finish_embedding(pooled, 0, false) == pooled);
  CHECK(finish_embedding(pooled, 100, true).size() == 4);  // more than there are: all
  CHECK(finish_embedding(std::vector<float>(3, 0.0f), 0, true) == std::vector<float>(3, 0.0f));  // no NaN
}

TEST_CASE("pooling names round-trip, unknown ones are refused", "[core][embeddings]") {
  for (const auto p : {pooling_kind::last, pooling_kind::mean, pooling_kind::first}) {
    CHECK(try_pooling_from_name(to_string(p)) == p);
  }
  CHECK_FALSE(try_pooling_from_name("cls").has_value());
  CHECK_FALSE(try_pooling_from_name("").has_value());
  CHECK(can_share_prefix(pooling_kind::last));
  CHECK_FALSE(can_share_prefix(pooling_kind::mean));
  CHECK_FALSE(can_share_prefix(pooling_kind::first));
}

TEST_CASE("ggml pooling types map to the engine's poolings, none, rank and unknown are stated but not implemented",
          "[core][embeddings]") {
  CHECK_FALSE(gguf_pooling(-1, "k").is_stated());
  CHECK(gguf_pooling(1, "k").kind == pooling_kind::mean);
  CHECK(gguf_pooling(2, "k").kind == pooling_kind::first);
  CHECK(gguf_pooling(2, "k").stated == "cls");
  CHECK(gguf_pooling(3, "k").kind == pooling_kind::last);
  for (const std::int64_t type : {0, 4, 9}) {
    INFO("type " << type);
    const auto p = gguf_pooling(type, "k");
    CHECK(p.is_stated());
    CHECK_FALSE(p.kind.has_value());
  }
  CHECK(gguf_pooling(0, "k").stated == "none");
  CHECK(gguf_pooling(4, "k").stated == "rank");
}

TEST_CASE("try_resolve_embedding: an explicit setting wins, auto takes the model's, else last and normalised",
          "[core][embeddings]") {
  const model_pooling nothing;
  auto r = try_resolve_embedding(std::nullopt, std::nullopt, nothing);
  REQUIRE(r.has_value());
  CHECK(r->pooling == pooling_kind::last);
  CHECK(r->normalize);
  model_pooling mean = gguf_pooling(1, "qwen3.pooling_type");
  mean.normalize = false;
  r = try_resolve_embedding(std::nullopt, std::nullopt, mean);
  REQUIRE(r.has_value());
  CHECK(r->pooling == pooling_kind::mean);
  CHECK_FALSE(r->normalize);
  CHECK_THAT(r->origin, Catch::Contains("qwen3.pooling_type"));
  r = try_resolve_embedding(pooling_kind::first, true, mean);
  REQUIRE(r.has_value());
  CHECK(r->pooling == pooling_kind::first);
  CHECK(r->normalize);
  const auto rank = gguf_pooling(4, "qwen3.pooling_type");
  const auto refused = try_resolve_embedding(std::nullopt, std::nullopt, rank);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == errc::unsupported);
  CHECK_THAT(refused.error().message, Catch::Contains("\"rank\"") && Catch::Contains("qwen3.pooling_type"));
  r = try_resolve_embedding(pooling_kind::last, std::nullopt, rank);  // explicit: served anyway
  REQUIRE(r.has_value());
  CHECK(r->pooling == pooling_kind::last);
}
