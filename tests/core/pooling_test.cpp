// The last steps of an embedding (core/embed/pooling.hpp): cut to `dimensions`, then
// L2-normalised; and the pooling names of the embeddings.pooling setting.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/embed/pooling.hpp"

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

TEST_CASE("pooling names round-trip; unknown ones are refused", "[core][embeddings]") {
  for (const auto p : {pooling_kind::last, pooling_kind::mean, pooling_kind::first}) {
    CHECK(try_pooling_from_name(to_string(p)) == p);
  }
  CHECK_FALSE(try_pooling_from_name("cls").has_value());
  CHECK_FALSE(try_pooling_from_name("").has_value());
  CHECK(can_share_prefix(pooling_kind::last));
  CHECK_FALSE(can_share_prefix(pooling_kind::mean));
  CHECK_FALSE(can_share_prefix(pooling_kind::first));
}
