#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/engine/sched/plugin_dir.hpp"

using namespace inflight;
namespace fs = std::filesystem;

namespace {

/// A fresh, empty folder under the system temp dir, removed at scope exit.
struct temp_tree {
  fs::path root;
  temp_tree() {
    root = fs::temp_directory_path() / ("inflight_plugin_dir_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(root / "bin");
  }
  ~temp_tree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  fs::path exe() const { return root / "bin" / "inflight"; }
};

}  // namespace

TEST_CASE("plugin dir: an installed tree wins over a build tree, both relative to the binary", "[plugin_dir]") {
  temp_tree t;
  auto none = try_resolve_plugin_dir("", nullptr, t.exe());
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().code == errc::not_found);
  // The message names where it looked and how to override.
  CHECK(none.error().message.find((t.root / "lib/inflight/plugins").string()) != std::string::npos);
  CHECK(none.error().message.find("scheduler.plugin_dir") != std::string::npos);
  CHECK(none.error().message.find("INFLIGHT_PLUGIN_DIR") != std::string::npos);

  fs::create_directories(t.root / "plugins");
  CHECK(try_resolve_plugin_dir("", nullptr, t.exe()).value() == t.root / "plugins");
  fs::create_directories(t.root / "lib/inflight/plugins");
  CHECK(try_resolve_plugin_dir("", "", t.exe()).value() == t.root / "lib/inflight/plugins");
}

TEST_CASE("plugin dir: a moved tree resolves to its new place", "[plugin_dir]") {
  temp_tree t;
  fs::create_directories(t.root / "a/bin");
  fs::create_directories(t.root / "a/lib/inflight/plugins");
  fs::rename(t.root / "a", t.root / "b");
  CHECK(try_resolve_plugin_dir("", nullptr, t.root / "b/bin/inflight").value() == t.root / "b/lib/inflight/plugins");
}

TEST_CASE("plugin dir: scheduler.plugin_dir, then INFLIGHT_PLUGIN_DIR, override the binary's location", "[plugin_dir]") {
  temp_tree t;
  fs::create_directories(t.root / "lib/inflight/plugins");
  CHECK(try_resolve_plugin_dir("/configured", "/from-env", t.exe()).value() == "/configured");
  CHECK(try_resolve_plugin_dir("", "/from-env", t.exe()).value() == "/from-env");
  // Overrides are taken as given, even when missing: loading the policy then names the file.
  CHECK(try_resolve_plugin_dir("/no/such/dir", nullptr, t.exe()).value() == "/no/such/dir");
}

TEST_CASE("plugin dir: the test binary finds the built plugins next to itself", "[plugin_dir]") {
  auto exe = try_current_executable();
  REQUIRE(exe.has_value());
  auto dir = try_resolve_plugin_dir("", nullptr, *exe);
  REQUIRE(dir.has_value());
  CHECK(fs::equivalent(*dir, INFLIGHT_TEST_PLUGIN_DIR));
  CHECK(fs::exists(*dir / "inflight_policy_splitfuse.so"));
}
