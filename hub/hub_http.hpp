#pragma once
/// The one HTTP client of the Hub downloads: a blocking request over libcurl (HTTPS with
/// the system's CA store, proxies from the environment as curl reads them). Transport
/// failures are errors; HTTP statuses are answers for the caller to read.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::hub {

struct http_request {
  std::string method = "GET";                 ///< GET | HEAD | POST
  std::string url;
  std::vector<std::string> headers;           ///< "Name: value"
  std::string body;                           ///< POST
  bool follow_redirects = false;
  std::int64_t range_from = 0;                ///< > 0: ask for the bytes from here on (Range: bytes=N-)
  /// >= 0: a 2xx answer's body is appended here, not kept. With range_from, an answer
  /// of the whole body (200, a server that ignores ranges) empties the file first.
  int body_fd = -1;
  std::function<void(std::size_t)> on_bytes; ///< body bytes written to body_fd, as they arrive
  long connect_timeout_s = 15;
  long stall_timeout_s = 60;                  ///< a transfer that moves no byte this long fails
};

struct http_response {
  long status = 0;
  std::map<std::string, std::string> headers;  ///< the last answer's, names in lower case
  std::string body;                            ///< unless written to body_fd (at most 16 MiB kept)
  std::string url;                             ///< where it ended, after redirects
  std::int64_t num_body_bytes = 0;             ///< written to body_fd
  std::string header(const std::string& lower_name) const;
};

/// errc::unavailable when the host cannot be reached at all (name, connection, TLS
/// handshake, timeout before any answer), errc::io_error when a transfer broke off.
result<http_response> try_http(const http_request& request);

/// `location` (absolute or relative, as a Location header gives it) against `base`.
result<std::string> try_join_url(const std::string& base, const std::string& location);

/// "scheme://host:port" of a URL (empty when it does not parse).
std::string origin_of(const std::string& url);

}  // namespace inflight::hub
