// The row cost of a step, fitted from (rows, seconds) pairs (core/engine/spec/row_cost.hpp).
#include "core/engine/spec/row_cost.hpp"

#include <catch2/catch.hpp>

using namespace inflight;

TEST_CASE("row cost: the slope over the intercept of the steps' times", "[core][spec]") {
  row_cost_fit fit;
  CHECK_FALSE(fit.row_cost().has_value());
  for (int i = 0; i < 50; ++i) fit.add(1, 0.0105);  // one size only: nothing to tell
  CHECK_FALSE(fit.row_cost().has_value());
  for (int i = 0; i < 200; ++i) {
    const int rows = 1 + i % 5;
    fit.add(rows, 0.010 + 0.0005 * rows);  // 10 ms fixed, 0.5 ms a row
  }
  REQUIRE(fit.row_cost().has_value());
  CHECK(*fit.row_cost() == Approx(0.05).epsilon(0.02));

  row_cost_fit per_row;
  for (int i = 0; i < 100; ++i) per_row.add(1 + i % 4, 0.001 * (1 + i % 4));  // all per row
  REQUIRE(per_row.row_cost().has_value());
  CHECK(*per_row.row_cost() >= 1000.0);

  row_cost_fit untimed;  // a backend that reports no time
  for (int i = 0; i < 100; ++i) untimed.add(1 + i % 4, 0.0);
  CHECK_FALSE(untimed.row_cost().has_value());
}
