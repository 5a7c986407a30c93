#pragma once
/// Mutual TLS on the engine port ([cluster] tls = true), through CAF 0.17's OpenSSL
/// module: the engine publishes with caf::openssl::publish, the router connects with
/// caf::openssl::remote_actor (engine_host and remote_engine pick these whenever the
/// actor system has the module). Both sides present their certificate (cluster.cert_file,
/// key_file) and accept the other's only when it chains to cluster.ca_file: a router
/// without a certificate from that CA cannot connect, and neither can an engine.
/// Host names are not checked: the CA is the trust boundary (a private CA for the cluster).

#include <caf/actor_system_config.hpp>

#include "core/base/error.hpp"
#include "core/config/deployment.hpp"

namespace inflight {

/// With cluster.tls: checks the three files (a clear error now instead of a failure at
/// the first connection), sets CAF's openssl.certificate / key / cafile and loads
/// caf::openssl::manager into `cfg`, which must have loaded the middleman already
/// (wire_system_config does). Without: changes nothing.
result<void> configure_cluster_tls(caf::actor_system_config& cfg, const cluster_settings& cluster);

}  // namespace inflight
