// A step's cost, fitted from its rows by kind and its time (core/engine/spec/step_cost.hpp).
#include "core/engine/spec/step_cost.hpp"

#include <catch2/catch.hpp>

using namespace inflight;

TEST_CASE("step cost: fixed and per-row seconds from the steps' times", "[core][spec]") {
  step_cost_fit fit;
  CHECK_FALSE(fit.cost().has_value());
  for (int i = 0; i < 50; ++i) fit.add(0, 1, 0, 0.0105);  // one size only: nothing to tell
  CHECK_FALSE(fit.cost().has_value());
  for (int i = 0; i < 200; ++i) {
    const int decodes = 1 + i % 5;
    fit.add(0, decodes, 0, 0.010 + 0.0005 * decodes);  // decodes only: 10 ms fixed, 0.5 ms each
  }
  auto c = fit.cost();
  REQUIRE(c.has_value());
  CHECK(c->fixed_seconds == Approx(0.010).epsilon(0.02));
  CHECK(c->decode_row_seconds == Approx(0.0005).epsilon(0.02));
  CHECK(c->draft_row_seconds == c->decode_row_seconds);  // no draft seen: priced as a decode
  CHECK(c->seconds(0, 4, 0) == Approx(0.012).epsilon(0.02));

  step_cost_fit untimed;  // a backend that reports no time
  for (int i = 0; i < 100; ++i) untimed.add(0, 1 + i % 4, 0, 0.0);
  CHECK_FALSE(untimed.cost().has_value());
}

TEST_CASE("step cost: prompt rows, decodes and drafted rows each cost their own", "[core][spec]") {
  // 1 ms fixed, 0.01 ms a prompt row, 0.04 ms a decode, 0.06 ms a drafted row: decodes
  // beside prompt chunks of varying length and drafts of varying length. A line through
  // all the rows would price a drafted row near the cheap prompt rows.
  step_cost_fit fit;
  for (int i = 0; i < 300; ++i) {
    const int decodes = 4 + i % 7, prompt = (i * 37) % 90, drafts = (i * 13) % 11;
    fit.add(prompt, decodes, drafts, 1e-3 + 1e-5 * prompt + 4e-5 * decodes + 6e-5 * drafts);
  }
  auto c = fit.cost();
  REQUIRE(c.has_value());
  CHECK(c->fixed_seconds == Approx(1e-3).epsilon(0.02));
  CHECK(c->prompt_row_seconds == Approx(1e-5).epsilon(0.02));
  CHECK(c->decode_row_seconds == Approx(4e-5).epsilon(0.02));
  CHECK(c->draft_row_seconds == Approx(6e-5).epsilon(0.02));
  CHECK(c->seconds(10, 10, 2) == Approx(1e-3 + 1e-4 + 4e-4 + 1.2e-4).epsilon(0.02));
}

TEST_CASE("step cost: a kind that stops varying keeps the slope learned for it", "[core][spec]") {
  step_cost_fit fit;
  // Eight decodes in every step, prompt chunks of any length: a decode's cost is unknown.
  for (int i = 0; i < 100; ++i) {
    const int prompt = (i * 37) % 90;
    fit.add(prompt, 8, 0, 1e-3 + 1e-5 * prompt + 8 * 1e-3);
  }
  CHECK_FALSE(fit.cost().has_value());
  // Streams come and go: it is learned; then drafts vary: theirs is.
  for (int i = 0; i < 100; ++i) fit.add(0, 4 + i % 5, 0, 1e-3 + (4 + i % 5) * 1e-3);
  for (int i = 0; i < 100; ++i) fit.add(0, 8, i % 4, 1e-3 + 8e-3 + (i % 4) * 2e-3);
  REQUIRE(fit.cost().has_value());
  CHECK(fit.cost()->decode_row_seconds == Approx(1e-3).epsilon(0.02));
  CHECK(fit.cost()->draft_row_seconds == Approx(2e-3).epsilon(0.02));
  // Both stay while nothing varies (no drafts, the same streams), long after those steps faded.
  for (int i = 0; i < 2000; ++i) fit.add(0, 8, 0, 9e-3);
  REQUIRE(fit.cost().has_value());
  CHECK(fit.cost()->decode_row_seconds == Approx(1e-3).epsilon(0.02));
  CHECK(fit.cost()->draft_row_seconds == Approx(2e-3).epsilon(0.02));
  CHECK(fit.cost()->seconds(0, 8, 0) == Approx(9e-3).epsilon(0.02));
}
