#include "actors/gateway/api_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cctype>
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

}  // namespace inflight::gateway
