#pragma once
/// API keys at the edge: `Authorization: Bearer <key>` (or `x-api-key: <key>`) checked against the keys of
/// server.api_keys and server.api_key_file (and `--api-key`). Only SHA-256 digests of the
/// keys are kept, and a presented key is hashed and compared with every digest in
/// constant time (CRYPTO_memcmp, no early exit on a match): the time taken depends on
/// the presented key's length and the number of keys, never on how much of a key matched.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/config/deployment.hpp"

namespace inflight::gateway {

class api_keys {
 public:
  /// No keys: every request is let in.
  api_keys() = default;
  /// Empty keys are refused by try_load; here they are skipped.
  explicit api_keys(const std::vector<std::string>& keys);

  /// server.api_keys and the lines of server.api_key_file (blank lines and lines that
  /// start with '#' skipped, surrounding spaces trimmed). An unreadable file, an empty
  /// key, or a key with spaces or control characters is an error that says which.
  static result<api_keys> try_load(const server_settings& settings);

  /// True when no key is configured (the edge is open).
  bool is_open() const { return digests_.empty(); }
  std::size_t size() const { return digests_.size(); }

  /// Whether `key` is one of the keys.
  bool accepts(std::string_view key) const;
  /// Whether an Authorization header value ("Bearer <key>", the scheme in any case)
  /// carries one of the keys; nullopt = no header.
  bool accepts_header(std::optional<std::string_view> authorization) const;

 private:
  using digest = std::array<unsigned char, 32>;
  std::vector<digest> digests_;
};

/// Anthropic's clients send their key as `x-api-key: <key>`: a request without an
/// Authorization header is checked with that key instead.
inline constexpr std::string_view api_key_header = "x-api-key";

/// The key of an Authorization header value: what follows "Bearer " (scheme in any case,
/// spaces around trimmed); nullopt for another scheme or no key.
std::optional<std::string_view> bearer_token(std::string_view authorization);

/// A browser's WebSocket cannot send an Authorization header, so the web UI offers two
/// subprotocols: `inflight` (which the server echoes) and `inflight.key.` followed by the
/// key in base64url without padding (a subprotocol is an HTTP token: a key's own
/// characters might not be allowed there). The key is used only when the upgrade has no
/// Authorization header.
inline constexpr std::string_view ws_protocol = "inflight";
inline constexpr std::string_view ws_key_protocol_prefix = "inflight.key.";

/// The key carried by a Sec-WebSocket-Protocol header value (a comma-separated list):
/// nullopt when no entry has the prefix, or its base64url text is not valid.
std::optional<std::string> ws_protocol_key(std::string_view header);
/// Whether the header's list offers `ws_protocol`.
bool offers_ws_protocol(std::string_view header);

}  // namespace inflight::gateway
