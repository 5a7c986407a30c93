#include "actors/gateway/sse.hpp"

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

std::string sse_event(const nlohmann::json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

std::string sse_named_event(std::string_view name, const nlohmann::json& payload, std::string_view id) {
  std::string out = "event: ";
  out += name;
  out += '\n';
  if (!id.empty()) {
    out += "id: ";
    out += id;
    out += '\n';
  }
  out += "data: " + dump_json(payload) + "\n\n";
  return out;
}

std::string sse_response_head(unsigned version, bool is_chunked, bool is_close) {
  std::string head = version >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
  head +=
      "Server: inflight\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
      "X-Accel-Buffering: no\r\n";
  if (is_chunked) head += "Transfer-Encoding: chunked\r\n";
  if (is_close) head += "Connection: close\r\n";
  return head + "\r\n";
}

std::string http_chunk(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string size;
  for (std::size_t n = bytes.size(); n > 0 || size.empty(); n >>= 4) size.insert(size.begin(), hex[n & 15]);
  std::string out;
  out.reserve(size.size() + bytes.size() + 4);
  out += size;
  out += "\r\n";
  out += bytes;
  out += "\r\n";
  return out;
}

result<std::vector<std::string>> try_split_sse(std::string_view body) {
  static constexpr std::string_view prefix = "data: ";
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    if (body.substr(pos, prefix.size()) != prefix)
      return make_error(errc::invalid_argument, "no `data: ` at byte " + std::to_string(pos));
    const std::size_t end = body.find("\n\n", pos);
    if (end == std::string_view::npos)
      return make_error(errc::invalid_argument, "event at byte " + std::to_string(pos) + " does not end with a blank line");
    const std::string_view payload = body.substr(pos + prefix.size(), end - pos - prefix.size());
    if (payload.find('\n') != std::string_view::npos)
      return make_error(errc::invalid_argument, "event at byte " + std::to_string(pos) + " spans several lines");
    out.emplace_back(payload);
    pos = end + 2;
  }
  return out;
}

}  // namespace inflight::gateway
