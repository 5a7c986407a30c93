// Drafters behind the C ABI (plugins/abi/inflight_drafter.h): the test drafter
// tests/plugins/inflight_drafter_test_recall.c loaded from the test plugin directory,
// found by name, its guesses cut to k and to the vocabulary, and the refusals of a
// missing file, a bad name, another ABI version and a table without propose. The
// scheduler drafting with it: scheduler_spec_test.cpp.

#include <catch2/catch.hpp>

#include "core/engine/spec/drafter_plugin.hpp"
#include "tests/core/engine/sched/sched_harness.hpp"  // the plugin directories

using namespace inflight;
using namespace inflight::test;

TEST_CASE("drafter plugin: loaded by name, its guesses cut to k and to the vocabulary", "[core][spec]") {
  const auto names = find_drafter_plugins(test_only_plugin_dir());
  CHECK(std::find(names.begin(), names.end(), "test_recall") != names.end());
  CHECK(find_drafter_plugins("/nonexistent/dir").empty());

  auto d = plugin_drafter::try_load(test_only_plugin_dir(), "test_recall", 10);
  INFO((d ? std::string() : d.error().message));
  REQUIRE(d.has_value());
  CHECK((*d)->name() == "test_recall");
  const std::vector<token_id> prompt = {1, 2, 3};
  CHECK((*d)->propose(1, prompt, 4).empty());  // nothing finished yet
  const std::vector<token_id> finished = {1, 2, 3, 4, 5, 6, 7};
  (*d)->on_finished(finished);
  CHECK((*d)->propose(1, prompt, 2) == std::vector<token_id>{4, 5});
  CHECK((*d)->propose(1, prompt, 9) == std::vector<token_id>{4, 5, 6, 7});
  CHECK((*d)->propose(1, std::vector<token_id>{2, 2}, 3).empty());
  (*d)->forget(1);  // the plugin has no forget: nothing happens

  // A guess past the vocabulary is cut before that token.
  auto small = plugin_drafter::try_load(test_only_plugin_dir(), "test_recall", 6);
  REQUIRE(small.has_value());
  (*small)->on_finished(finished);
  CHECK((*small)->propose(1, prompt, 4) == std::vector<token_id>{4, 5});

  auto missing = plugin_drafter::try_load(test_only_plugin_dir(), "no_such_drafter", 10);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == errc::not_found);
  auto bad_name = plugin_drafter::try_load(test_only_plugin_dir(), "../escape", 10);
  REQUIRE_FALSE(bad_name.has_value());
  CHECK(bad_name.error().code == errc::invalid_argument);

  inflight_drafter_vtable other = {99, "future", nullptr, nullptr, nullptr, nullptr, nullptr};
  auto wrong_abi = plugin_drafter::try_from_vtable(&other, 10);
  REQUIRE_FALSE(wrong_abi.has_value());
  CHECK(wrong_abi.error().message.find("version 99") != std::string::npos);
  other.abi_version = INFLIGHT_DRAFTER_ABI_VERSION;
  auto no_propose = plugin_drafter::try_from_vtable(&other, 10);
  REQUIRE_FALSE(no_propose.has_value());
  CHECK(no_propose.error().message.find("propose") != std::string::npos);
}
