// The engine port (actors/cluster/cluster_tls.hpp, engine_host, remote_engine): it binds to the
// address it is given and no other, and with [cluster] tls both sides present
// certificates from the cluster's CA: a router with one is served, a router without a
// valid one (no TLS, or a certificate from another CA) is refused.
#include <catch2/catch.hpp>

#include <caf/all.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "actors/cluster/cluster_tls.hpp"
#include "actors/cluster/remote_engine.hpp"
#include "tests/actors/engine/engine_fixture.hpp"
#include "tests/actors/tls_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// The cluster settings of one side: `name`.pem / .key, trusting `ca`.pem.
cluster_settings side(const std::filesystem::path& dir, const std::string& name, const std::string& ca) {
  cluster_settings c;
  c.tls = true;
  c.cert_file = (dir / (name + ".pem")).string();
  c.key_file = (dir / (name + ".key")).string();
  c.ca_file = (dir / (ca + ".pem")).string();
  return c;
}

/// A network actor system config with `cluster`'s TLS (none when tls is false).
std::unique_ptr<wire_system_config> wire_config(const cluster_settings& cluster) {
  auto cfg = std::make_unique<wire_system_config>(0.2, 2.0);
  auto ok = configure_cluster_tls(*cfg, cluster);
  INFO((ok ? std::string() : ok.error().message));
  REQUIRE(ok.has_value());
  return cfg;
}

/// Whether a TCP connection to `address`:`port` is accepted.
bool can_connect(const std::string& address, std::uint16_t port) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  boost::system::error_code ec;
  socket.connect({boost::asio::ip::make_address(address), port}, ec);
  return !ec;
}

}  // namespace

TEST_CASE("cluster: the engine port binds to the stated address only", "[actors][cluster]") {
  auto eng = start_engine(dummy_deployment());
  auto cfg = wire_config({});
  caf::actor_system net{*cfg};
  auto host = engine_host::start(net, *eng, "127.0.0.1", 0);
  REQUIRE(host.has_value());
  const auto port = (*host)->port();
  CHECK(can_connect("127.0.0.1", port));
  // Another loopback address of this machine: nothing listens there.
  CHECK_FALSE(can_connect("127.0.0.2", port));
  host->reset();
  eng->shutdown(0.0);
}

TEST_CASE("cluster: mutual TLS serves a router with a certificate from the CA and refuses the others",
          "[actors][cluster][tls]") {
  const auto dir = tls_dir("cluster");
  make_self_signed(dir, "ca");
  make_signed(dir, "engine", "ca");
  make_signed(dir, "router", "ca");
  make_self_signed(dir, "other-ca");
  make_signed(dir, "rogue", "other-ca");

  auto eng = start_engine(dummy_deployment());
  auto engine_cfg = wire_config(side(dir, "engine", "ca"));
  caf::actor_system engine_net{*engine_cfg};
  REQUIRE(engine_net.has_openssl_manager());
  auto host = engine_host::start(engine_net, *eng, "127.0.0.1", 0);
  REQUIRE(host.has_value());
  const auto port = (*host)->port();

  {
    auto cfg = wire_config(side(dir, "router", "ca"));
    caf::actor_system router_net{*cfg};
    auto remote = remote_engine::connect(router_net, "127.0.0.1", port, 10.0);
    INFO((remote ? std::string() : remote.error().message));
    REQUIRE(remote.has_value());
    auto sink = std::make_shared<collect_sink>();
    auto request = greedy_request(*eng, "Hi", 3);
    request.params.ignore_eos = true;
    REQUIRE((*remote)->submit(std::move(request), sink).has_value());
    REQUIRE(sink->wait());
    CHECK(sink->finish().reason == finish_reason::length);
    CHECK(sink->tokens().size() == 3);
  }
  {
    // Trusts the engine's CA, but its own certificate is from another one.
    auto cfg = wire_config(side(dir, "rogue", "ca"));
    caf::actor_system router_net{*cfg};
    auto remote = remote_engine::connect(router_net, "127.0.0.1", port, 10.0);
    CHECK_FALSE(remote.has_value());
  }
  {
    // No TLS at all.
    auto cfg = wire_config({});
    caf::actor_system router_net{*cfg};
    auto remote = remote_engine::connect(router_net, "127.0.0.1", port, 10.0);
    CHECK_FALSE(remote.has_value());
  }
  host->reset();
  eng->shutdown(0.0);
}

TEST_CASE("cluster: bad certificate files are a clear error before any connection", "[actors][cluster][tls]") {
  const auto dir = tls_dir("cluster-bad");
  make_self_signed(dir, "ca");
  make_signed(dir, "engine", "ca");
  caf::actor_system_config cfg;
  auto c = side(dir, "engine", "ca");
  c.ca_file = (dir / "missing.pem").string();
  auto missing = configure_cluster_tls(cfg, c);
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("cluster.ca_file") && Catch::Contains("missing.pem"));
  c = side(dir, "engine", "ca");
  c.key_file = (dir / "ca.key").string();
  auto mismatched = configure_cluster_tls(cfg, c);
  REQUIRE_FALSE(mismatched.has_value());
  CHECK_THAT(mismatched.error().message, Catch::Contains("cluster.key_file"));
  // tls = false: nothing checked, nothing loaded.
  CHECK(configure_cluster_tls(cfg, cluster_settings{}).has_value());
}
