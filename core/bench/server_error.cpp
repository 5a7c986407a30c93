#include "core/bench/server_error.hpp"

namespace inflight::bench {

namespace {

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// Shortens `text` to at most `max_bytes` without cutting a multi-byte character.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && is_utf8_continuation(text[end])) --end;
  return text.substr(0, end);
}

}  // namespace

std::optional<std::string> error_message(const nlohmann::json& answer) {
  if (!answer.is_object()) return std::nullopt;
  if (const auto e = answer.find("error"); e != answer.end()) {
    if (e->is_string()) return e->get<std::string>();
    if (e->is_object()) {
      if (const auto m = e->find("message"); m != e->end() && m->is_string()) return m->get<std::string>();
    }
    return std::nullopt;
  }
  if (const auto m = answer.find("message"); m != answer.end() && m->is_string()) return m->get<std::string>();
  return std::nullopt;
}

std::optional<int> error_status(const nlohmann::json& answer) {
  if (!answer.is_object()) return std::nullopt;
  const auto e = answer.find("error");
  if (e == answer.end() || !e->is_object()) return std::nullopt;
  const auto code = e->find("code");
  if (code == e->end() || !code->is_number_integer()) return std::nullopt;
  return code->get<int>();
}

std::string error_code_name(const nlohmann::json& answer) {
  if (!answer.is_object()) return {};
  const auto e = answer.find("error");
  if (e == answer.end() || !e->is_object()) return {};
  const auto code = e->find("code");
  return code != e->end() && code->is_string() ? code->get<std::string>() : std::string();
}

std::string body_error_code_name(std::string_view body) {
  return error_code_name(nlohmann::json::parse(body, nullptr, false));
}

std::string one_line_excerpt(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (char c : utf8_prefix(text, max_bytes)) {
    const bool is_space = static_cast<unsigned char>(c) < 0x20 || c == 0x7F || c == ' ';
    if (!is_space) out.push_back(c);
    else if (!out.empty() && out.back() != ' ') out.push_back(' ');
  }
  while (out.ends_with(' ')) out.pop_back();
  return out;
}

std::string http_error_text(int status, std::string_view body) {
  const auto answer = nlohmann::json::parse(body, nullptr, false);
  auto message = error_message(answer);
  if (!message) message = one_line_excerpt(body, error_excerpt_bytes);
  if (message->empty()) message = "(empty body)";
  return "HTTP " + std::to_string(status) + ": " + *message;
}

}  // namespace inflight::bench
