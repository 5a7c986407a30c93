#include "hub/hub_http.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace inflight::hub {

namespace {

constexpr std::size_t max_kept_body = 16u << 20;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct transfer {
  CURL* curl = nullptr;
  const http_request* request = nullptr;
  http_response response;
  bool write_failed = false;
  bool has_body = false;  ///< a 2xx body byte was written
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<transfer*>(user);
  std::string line(data, size * count);
  if (line.starts_with("HTTP/")) {  // a new answer (after a redirect or a 100): its headers only
    t.response.headers.clear();
    return size * count;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon), value = line.substr(colon + 1);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const auto first = value.find_first_not_of(" \t");
  const auto last = value.find_last_not_of(" \t\r\n");
  t.response.headers[name] = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<transfer*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &status);
  if (t.request->body_fd >= 0 && status >= 200 && status < 300) {
    if (!t.has_body && t.request->range_from > 0 && status != 206 && ::ftruncate(t.request->body_fd, 0) != 0) {
      t.write_failed = true;
      return 0;
    }
    t.has_body = true;
    for (std::size_t done = 0; done < n;) {
      const auto w = ::write(t.request->body_fd, data + done, n - done);
      if (w <= 0) {
        t.write_failed = true;
        return 0;  // curl stops with CURLE_WRITE_ERROR
      }
      done += std::size_t(w);
    }
    t.response.num_body_bytes += std::int64_t(n);
    if (t.request->on_bytes) t.request->on_bytes(n);
    return n;
  }
  if (t.response.body.size() < max_kept_body) t.response.body.append(data, std::min(n, max_kept_body - t.response.body.size()));
  return n;
}

bool is_unreachable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string http_response::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

result<http_response> try_http(const http_request& request) {
  init_curl_once();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return make_error(errc::internal, "libcurl: cannot start a transfer");
  transfer t;
  t.curl = curl.get();
  t.request = &request;
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "inflight (hf-hub client)");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(request.body.size()));
  }
  const std::string range = "bytes=" + std::to_string(request.range_from) + "-";
  if (request.range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str() + 6);
  const CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  char* url = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &url) == CURLE_OK && url) t.response.url = url;
  if (code != CURLE_OK) {
    if (t.write_failed) return make_error(errc::io_error, "cannot write what " + request.url + " sends (disk full?)");
    const std::string why = curl_easy_strerror(code);
    if (is_unreachable(code) || (code == CURLE_OPERATION_TIMEDOUT && t.response.status == 0))
      return make_error(errc::unavailable, "cannot reach " + origin_of(request.url) + ": " + why);
    return make_error(errc::io_error, request.url + ": the transfer broke off after " +
                                          std::to_string(t.response.num_body_bytes) + " bytes: " + why);
  }
  return std::move(t.response);
}

result<std::string> try_join_url(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK)
    return make_error(errc::invalid_argument, "a redirect to '" + location + "' that is not a URL");
  char* out = nullptr;
  if (curl_url_get(u.get(), CURLUPART_URL, &out, 0) != CURLUE_OK)
    return make_error(errc::invalid_argument, "a redirect to '" + location + "' that is not a URL");
  std::string joined(out);
  curl_free(out);
  return joined;
}

std::string origin_of(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  auto part = [&](CURLUPart p, unsigned flags) {
    char* s = nullptr;
    if (curl_url_get(u.get(), p, &s, flags) != CURLUE_OK || !s) return std::string();
    std::string v(s);
    curl_free(s);
    return v;
  };
  return part(CURLUPART_SCHEME, 0) + "://" + part(CURLUPART_HOST, 0) + ":" + part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
}

}  // namespace inflight::hub
