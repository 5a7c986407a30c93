#include "actors/cluster/cluster_tls.hpp"

#include <caf/openssl/manager.hpp>

#include "actors/tls_files.hpp"

namespace inflight {

result<void> configure_cluster_tls(caf::actor_system_config& cfg, const cluster_settings& cluster) {
  if (!cluster.tls) return {};
  tls_files files{cluster.cert_file, cluster.key_file, cluster.ca_file, "cluster.cert_file", "cluster.key_file",
                  "cluster.ca_file"};
  if (auto ok = try_check_tls_files(files); !ok) return ok;
  // Any of these set turns on CAF's peer verification (SSL_VERIFY_PEER |
  // SSL_VERIFY_FAIL_IF_NO_PEER_CERT) on both ends of every connection.
  cfg.openssl_certificate = cluster.cert_file;
  cfg.openssl_key = cluster.key_file;
  cfg.openssl_cafile = cluster.ca_file;
  cfg.load<caf::openssl::manager>();
  return {};
}

}  // namespace inflight
