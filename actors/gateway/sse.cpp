#include "actors/gateway/sse.hpp"

#include "actors/gateway/errors.hpp"

namespace inflight::gateway {

std::string sse_event(const nlohmann::json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

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
