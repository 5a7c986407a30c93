// [server] keys and certificates, [cluster] and [router]: what the file says arrives in
// the deployment, and a bad value is an error naming the key.
#include <catch2/catch.hpp>

#include "config/deployment_loader.hpp"

using namespace inflight;
using namespace inflight::config;

namespace {

std::string error_of(const std::string& text) {
  auto d = parse_deployment(text);
  REQUIRE_FALSE(d.has_value());
  return d.error().message;
}

}  // namespace

TEST_CASE("config: [server] API keys and certificates", "[config]") {
  auto d = parse_deployment(R"(
[server]
api_keys = ["sk-one", "sk-two"]
api_key_file = "/etc/inflight/keys"
metrics_open = true
tls_cert_file = "/etc/inflight/cert.pem"
tls_key_file = "/etc/inflight/key.pem"
)");
  REQUIRE(d.has_value());
  CHECK(d->server.api_keys == std::vector<std::string>{"sk-one", "sk-two"});
  CHECK(d->server.api_key_file == "/etc/inflight/keys");
  CHECK(d->server.metrics_open);
  CHECK(d->server.tls_cert_file == "/etc/inflight/cert.pem");
  CHECK(d->server.tls_key_file == "/etc/inflight/key.pem");
  // The defaults: open, plain HTTP.
  const deployment defaults;
  CHECK(defaults.server.api_keys.empty());
  CHECK_FALSE(defaults.server.metrics_open);
  CHECK(defaults.server.tls_cert_file.empty());
}

TEST_CASE("config: bad API keys and half a certificate are errors that name the key", "[config]") {
  CHECK_THAT(error_of("[server]\napi_keys = \"sk-one\"\n"), Catch::Contains("server.api_keys") &&
                                                                Catch::Contains("an array of strings"));
  CHECK_THAT(error_of("[server]\napi_keys = [\"ok\", 3]\n"), Catch::Contains("server.api_keys"));
  CHECK_THAT(error_of("[server]\napi_keys = [\"\"]\n"), Catch::Contains("server.api_keys") &&
                                                            Catch::Contains("non-empty"));
  CHECK_THAT(error_of("[server]\napi_keys = [\"two words\"]\n"), Catch::Contains("without spaces"));
  CHECK_THAT(error_of("[server]\nmetrics_open = \"yes\"\n"), Catch::Contains("server.metrics_open"));
  CHECK_THAT(error_of("[server]\ntls_cert_file = \"c.pem\"\n"),
             Catch::Contains("server.tls_cert_file") && Catch::Contains("server.tls_key_file"));
}

TEST_CASE("config: [cluster] and [router] tables", "[config]") {
  auto d = parse_deployment(R"(
[cluster]
bind = "10.0.0.5:7100"
tls = true
cert_file = "engine.pem"
key_file = "engine.key"
ca_file = "ca.pem"
heartbeat_interval_s = 0.5
connection_timeout_s = 3

[router]
engines = ["10.0.0.5:7100", "10.0.0.6:7100"]
policy = "prefix"
request_timeout_s = 20
reconnect_interval_s = 2.5
)");
  REQUIRE(d.has_value());
  CHECK(d->cluster.bind == "10.0.0.5:7100");
  CHECK(d->cluster.tls);
  CHECK(d->cluster.cert_file == "engine.pem");
  CHECK(d->cluster.key_file == "engine.key");
  CHECK(d->cluster.ca_file == "ca.pem");
  CHECK(d->cluster.heartbeat_interval_s == 0.5);
  CHECK(d->cluster.connection_timeout_s == 3.0);
  CHECK(d->router.engines == std::vector<std::string>{"10.0.0.5:7100", "10.0.0.6:7100"});
  CHECK(d->router.policy == "prefix");
  CHECK(d->router.request_timeout_s == 20.0);
  CHECK(d->router.reconnect_interval_s == 2.5);
  const deployment defaults;
  CHECK(defaults.cluster.bind.empty());
  CHECK_FALSE(defaults.cluster.tls);
  CHECK(defaults.router.policy == "least_load");
}

TEST_CASE("config: bad [cluster] and [router] values are errors that name the key", "[config]") {
  CHECK_THAT(error_of("[router]\nengines = [\"10.0.0.5\"]\n"),
             Catch::Contains("router.engines") && Catch::Contains("host:port"));
  CHECK_THAT(error_of("[router]\nengines = [\"h:0\"]\n"), Catch::Contains("router.engines"));
  CHECK_THAT(error_of("[router]\nengines = [\"h:70000\"]\n"), Catch::Contains("router.engines"));
  CHECK_THAT(error_of("[router]\nengines = \"h:7100\"\n"), Catch::Contains("router.engines"));
  CHECK_THAT(error_of("[router]\npolicy = \"\"\n"), Catch::Contains("router.policy"));
  CHECK_THAT(error_of("[router]\nrequest_timeout_s = -1\n"), Catch::Contains("router.request_timeout_s"));
  CHECK_THAT(error_of("[cluster]\nbind = \"nowhere\"\n"), Catch::Contains("cluster.bind"));
  CHECK_THAT(error_of("[cluster]\ntls = 1\n"), Catch::Contains("cluster.tls"));
  // tls without its files: the error lists them.
  CHECK_THAT(error_of("[cluster]\ntls = true\ncert_file = \"c.pem\"\n"),
             Catch::Contains("cluster.key_file") && Catch::Contains("cluster.ca_file"));
  CHECK_THAT(error_of("[cluster]\nheartbeat_interval_s = 5\nconnection_timeout_s = 2\n"),
             Catch::Contains("cluster.connection_timeout_s"));
  // Port 0 (any free port) is fine for the engine's own bind.
  CHECK(parse_deployment("[cluster]\nbind = \"127.0.0.1:0\"\n").has_value());
}

TEST_CASE("config: --set reaches the new keys", "[config]") {
  deployment d;
  REQUIRE(apply_override(d, "server.api_keys=[\"a\",\"b\"]"));
  CHECK(d.server.api_keys.size() == 2);
  REQUIRE(apply_override(d, "router.engines=[\"127.0.0.1:7100\"]"));
  CHECK(d.router.engines.front() == "127.0.0.1:7100");
  REQUIRE(apply_override(d, "cluster.tls=true"));
  CHECK(d.cluster.tls);
  CHECK_FALSE(validate_deployment(d).has_value());  // tls without files
}
