#include "actors/tls_files.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace inflight {
namespace {

/// The reasons OpenSSL queued for the last failure, oldest first.
std::string openssl_errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

result<void> check_readable(const std::string& key, const std::string& path) {
  if (path.empty()) return make_error(errc::invalid_argument, key + " is not set");
  std::ifstream in(path);
  if (!in) return make_error(errc::io_error, key + " " + path + ": cannot be read: " + std::strerror(errno));
  return {};
}

}  // namespace

result<void> try_check_tls_files(const tls_files& f) {
  if (auto ok = check_readable(f.cert_key, f.cert_file); !ok) return ok;
  if (auto ok = check_readable(f.key_key, f.key_file); !ok) return ok;
  if (!f.ca_file.empty())
    if (auto ok = check_readable(f.ca_key, f.ca_file); !ok) return ok;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx) return make_error(errc::internal, "cannot create an OpenSSL context: " + openssl_errors());
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), f.cert_file.c_str()) != 1)
    return make_error(errc::invalid_argument,
                      f.cert_key + " " + f.cert_file + ": not a PEM certificate (chain): " + openssl_errors());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), f.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL checks the key against the certificate as it loads it.
    const bool is_mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
    return make_error(errc::invalid_argument,
                      f.key_key + " " + f.key_file +
                          (is_mismatch ? " is not the key of " + f.cert_key + " " + f.cert_file
                                       : std::string(": not a PEM private key")) +
                          ": " + openssl_errors());
  }
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return make_error(errc::invalid_argument, f.key_key + " " + f.key_file + " is not the key of " + f.cert_key + " " +
                                                  f.cert_file + ": " + openssl_errors());
  if (!f.ca_file.empty() && SSL_CTX_load_verify_locations(ctx.get(), f.ca_file.c_str(), nullptr) != 1)
    return make_error(errc::invalid_argument,
                      f.ca_key + " " + f.ca_file + ": not PEM CA certificates: " + openssl_errors());
  return {};
}

}  // namespace inflight
