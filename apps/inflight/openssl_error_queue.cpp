// OpenSSL's error queue, cleared before every TLS call in this process.
//
// OpenSSL reads the outcome of a TLS call (SSL_get_error) from the calling thread's
// error queue, which must therefore be empty before the call. CAF 0.17's OpenSSL module
// (libcaf_openssl, the engine port's mutual TLS) does not clear it, and drains it only
// when its INFO logging is compiled in, which Debian's build is not. After one refused
// handshake (a peer without a valid certificate) the queue of the middleman's thread
// keeps that error, and the next read on any other connection that would merely block
// is taken for a TLS failure: a legitimate router's connection is dropped.
//
// These definitions stand in front of libssl's (the executable's symbols come first in
// the dynamic linker's search; apps/CMakeLists.txt exports them): each clears the queue
// and calls libssl's own. Boost.Asio's TLS streams clear it themselves; for them this
// changes nothing.
#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

template <class Fn>
Fn next_definition(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_accept(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

int SSL_connect(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

}  // extern "C"
