// The key check itself (actors/gateway/api_keys.hpp): which keys and headers pass, the
// key file, and that the check compares digests of equal length whatever was sent.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "actors/gateway/api_keys.hpp"

using namespace inflight;
using namespace inflight::gateway;

namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("api keys: each configured key passes, anything else does not", "[gateway][auth]") {
  const api_keys keys({"sk-alpha", "sk-beta"});
  CHECK_FALSE(keys.is_open());
  CHECK(keys.size() == 2);
  CHECK(keys.accepts("sk-alpha"));
  CHECK(keys.accepts("sk-beta"));
  CHECK_FALSE(keys.accepts("sk-alph"));    // a prefix
  CHECK_FALSE(keys.accepts("sk-alphaa"));  // one byte more
  CHECK_FALSE(keys.accepts("sk-Alpha"));   // case matters
  CHECK_FALSE(keys.accepts(""));
  CHECK_FALSE(keys.accepts(std::string(10000, 'x')));  // any length is hashed, never compared as is
}

TEST_CASE("api keys: the Authorization header", "[gateway][auth]") {
  const api_keys keys({"sk-alpha"});
  CHECK(keys.accepts_header("Bearer sk-alpha"));
  CHECK(keys.accepts_header("bearer sk-alpha"));   // the scheme in any case
  CHECK(keys.accepts_header("BEARER   sk-alpha "));
  CHECK_FALSE(keys.accepts_header(std::nullopt));  // no header
  CHECK_FALSE(keys.accepts_header("sk-alpha"));    // no scheme
  CHECK_FALSE(keys.accepts_header("Basic sk-alpha"));
  CHECK_FALSE(keys.accepts_header("Bearer"));
  CHECK_FALSE(keys.accepts_header("Bearer "));
  CHECK_FALSE(keys.accepts_header("Bearersk-alpha"));
  CHECK_FALSE(keys.accepts_header("Bearer sk-beta"));
  CHECK(bearer_token("Bearer  k1 ") == std::optional<std::string_view>("k1"));
  // No key configured: open.
  const api_keys open;
  CHECK(open.is_open());
  CHECK(open.accepts_header(std::nullopt));
}

TEST_CASE("api keys: from the settings and a key file", "[gateway][auth]") {
  server_settings s;
  s.api_keys = {"sk-inline"};
  s.api_key_file = write_temp("inflight-keys-test.txt", "# keys of the team\n\n  sk-file-1  \nsk-file-2\r\n").string();
  auto keys = api_keys::try_load(s);
  REQUIRE(keys.has_value());
  CHECK(keys->size() == 3);
  CHECK(keys->accepts("sk-inline"));
  CHECK(keys->accepts("sk-file-1"));
  CHECK(keys->accepts("sk-file-2"));
  CHECK_FALSE(keys->accepts("# keys of the team"));

  s.api_key_file = "/nonexistent/inflight-keys";
  auto missing = api_keys::try_load(s);
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("server.api_key_file") && Catch::Contains("/nonexistent"));

  s.api_key_file = write_temp("inflight-keys-empty.txt", "# nothing yet\n\n").string();
  auto empty = api_keys::try_load(s);
  REQUIRE_FALSE(empty.has_value());
  CHECK_THAT(empty.error().message, Catch::Contains("holds no key"));

  s.api_key_file = write_temp("inflight-keys-bad.txt", "sk-ok\nsk with space\n").string();
  auto bad = api_keys::try_load(s);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains(":2"));  // the line

  s.api_key_file.clear();
  s.api_keys = {};
  auto none = api_keys::try_load(s);
  REQUIRE(none.has_value());
  CHECK(none->is_open());
}

TEST_CASE("api keys: a browser's key as a WebSocket subprotocol (base64url, no padding)", "[gateway][auth]") {
  // "sk-ui/test=1" in base64url is "c2stdWkvdGVzdD0x"; "ab" is "YWI" (no padding).
  CHECK(ws_protocol_key("inflight, inflight.key.c2stdWkvdGVzdD0x") == std::optional<std::string>("sk-ui/test=1"));
  CHECK(ws_protocol_key(" inflight.key.YWI ,inflight") == std::optional<std::string>("ab"));
  CHECK(ws_protocol_key("inflight") == std::nullopt);                 // no key entry
  CHECK(ws_protocol_key("") == std::nullopt);
  CHECK(ws_protocol_key("inflight.key.") == std::nullopt);            // an empty key
  CHECK(ws_protocol_key("inflight.key.YWI=") == std::nullopt);        // padding is not base64url here
  CHECK(ws_protocol_key("inflight.key.YW+") == std::nullopt);         // '+' is base64, not base64url
  CHECK(ws_protocol_key("inflight.key.Y") == std::nullopt);           // one character left over
  CHECK(ws_protocol_key("inflight.key.YWJ") == std::nullopt);         // stray low bits in the last character
  CHECK(ws_protocol_key("x-inflight.key.YWI") == std::nullopt);       // the prefix starts the entry
  CHECK(offers_ws_protocol("chat, inflight"));
  CHECK(offers_ws_protocol("inflight"));
  CHECK_FALSE(offers_ws_protocol("inflight.key.YWI"));
  CHECK_FALSE(offers_ws_protocol("inflights, chat"));
  CHECK_FALSE(offers_ws_protocol(""));
}
