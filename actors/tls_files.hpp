#pragma once
/// Certificate files, checked before a server or the middleman uses them, so that a
/// missing, unreadable or mismatched file is a clear error at start-up (CAF's OpenSSL
/// module would only fail at the first connection, inside its I/O thread).

#include <string>

#include "core/base/error.hpp"

namespace inflight {

/// PEM files of one side of a TLS connection; each `*_key` names the config key (for
/// messages). An empty ca_file is not checked.
struct tls_files {
  std::string cert_file, key_file, ca_file;
  std::string cert_key = "cert_file", key_key = "key_file", ca_key = "ca_file";
};

/// Reads the certificate chain, the private key (which must match it) and the CA
/// certificates; the error names the key and the file and says what is wrong.
result<void> try_check_tls_files(const tls_files& files);

}  // namespace inflight
