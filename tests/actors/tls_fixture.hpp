#pragma once
// Throwaway certificates, made with the openssl command at test time (no key is ever
// committed): a CA, leaf certificates it signs, and a self-signed server certificate.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace inflight::test {

/// A fresh folder for one test's certificates.
inline std::filesystem::path tls_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("inflight-tls-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Runs a shell command; fails the test with the command when it does not succeed.
inline void run_or_fail(const std::string& command) {
  INFO(command);
  REQUIRE(std::system((command + " >/dev/null 2>&1").c_str()) == 0);
}

/// `dir`/<name>.pem and <name>.key: a P-256 key and a certificate for 127.0.0.1 and
/// localhost, self-signed.
inline void make_self_signed(const std::filesystem::path& dir, const std::string& name) {
  const auto base = (dir / name).string();
  run_or_fail("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" +
              name + " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + base + ".key -out " + base +
              ".pem");
}

/// `dir`/<name>.pem and <name>.key: a certificate signed by the CA `dir`/<ca>.pem (whose
/// key is <ca>.key).
inline void make_signed(const std::filesystem::path& dir, const std::string& name, const std::string& ca) {
  const auto base = (dir / name).string();
  const auto ca_base = (dir / ca).string();
  run_or_fail("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + name +
              " -keyout " + base + ".key -out " + base + ".csr");
  run_or_fail("openssl x509 -req -days 2 -in " + base + ".csr -CA " + ca_base + ".pem -CAkey " + ca_base +
              ".key -CAcreateserial -out " + base + ".pem");
}

}  // namespace inflight::test
