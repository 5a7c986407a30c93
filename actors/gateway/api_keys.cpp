#include "actors/gateway/api_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
#include <cstdint>
#include <fstream>

namespace inflight::gateway {
namespace {

std::array<unsigned char, 32> sha256(std::string_view text) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data());
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// A key must be one header token: printable ASCII without spaces.
result<void> check_key(std::string_view key, const std::string& where) {
  if (key.empty()) return make_error(errc::invalid_argument, where + ": an API key is empty");
  for (const unsigned char c : key)
    if (c <= 0x20 || c >= 0x7f)
      return make_error(errc::invalid_argument,
                        where + ": an API key holds a space, a control or a non-ASCII character");
  return {};
}

}  // namespace

api_keys::api_keys(const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (!k.empty()) digests_.push_back(sha256(k));
}

result<api_keys> api_keys::try_load(const server_settings& settings) {
  std::vector<std::string> keys;
  for (const auto& k : settings.api_keys) {
    if (auto ok = check_key(k, "server.api_keys"); !ok) return std::unexpected(ok.error());
    keys.push_back(k);
  }
  if (!settings.api_key_file.empty()) {
    std::ifstream in(settings.api_key_file);
    if (!in) return make_error(errc::io_error, "server.api_key_file " + settings.api_key_file + ": cannot be read");
    std::string line;
    int line_number = 0;
    std::size_t num_from_file = 0;
    while (std::getline(in, line)) {
      ++line_number;
      const auto key = trim(line);
      if (key.empty() || key.front() == '#') continue;
      const std::string where = "server.api_key_file " + settings.api_key_file + ":" + std::to_string(line_number);
      if (auto ok = check_key(key, where); !ok) return std::unexpected(ok.error());
      keys.emplace_back(key);
      ++num_from_file;
    }
    if (num_from_file == 0)
      return make_error(errc::invalid_argument,
                        "server.api_key_file " + settings.api_key_file + " holds no key (one key per line)");
  }
  return api_keys(keys);
}

bool api_keys::accepts(std::string_view key) const {
  const auto presented = sha256(key);
  // Every digest is compared, whichever matches: no early exit.
  int num_matches = 0;
  for (const auto& d : digests_) num_matches += CRYPTO_memcmp(d.data(), presented.data(), d.size()) == 0;
  return num_matches > 0;
}

bool api_keys::accepts_header(std::optional<std::string_view> authorization) const {
  if (is_open()) return true;
  if (!authorization) return false;
  const auto token = bearer_token(*authorization);
  return token && accepts(*token);
}

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  auto s = trim(authorization);
  constexpr std::string_view scheme = "bearer";
  if (s.size() <= scheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != scheme[i]) return std::nullopt;
  if (s[scheme.size()] != ' ' && s[scheme.size()] != '\t') return std::nullopt;
  auto token = trim(s.substr(scheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

namespace {

/// Each entry of a comma-separated header list, spaces around it trimmed.
template <class F>
void for_each_entry(std::string_view list, F&& f) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto entry = trim(list.substr(0, comma));
    if (!entry.empty() && f(entry)) return;
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

/// RFC 4648 section 5 without padding; nullopt for another character, a length that
/// leaves 1 character over, or stray bits in the last one.
std::optional<std::string> decode_base64url(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int num_bits = 0;
  for (const char c : text) {
    const int v = base64url_value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | std::uint32_t(v);
    num_bits += 6;
    if (num_bits >= 8) {
      num_bits -= 8;
      out.push_back(static_cast<char>((bits >> num_bits) & 0xffu));
    }
  }
  if ((bits & ((1u << num_bits) - 1u)) != 0) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> ws_protocol_key(std::string_view header) {
  std::optional<std::string> key;
  for_each_entry(header, [&](std::string_view entry) {
    if (!entry.starts_with(ws_key_protocol_prefix)) return false;
    key = decode_base64url(entry.substr(ws_key_protocol_prefix.size()));
    return true;
  });
  if (key && key->empty()) return std::nullopt;
  return key;
}

bool offers_ws_protocol(std::string_view header) {
  bool found = false;
  for_each_entry(header, [&](std::string_view entry) { return found = entry == ws_protocol; });
  return found;
}

}  // namespace inflight::gateway
