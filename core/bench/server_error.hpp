#pragma once
/// What a benchmark client records when a server refuses a request: the server's own
/// words, taken from the OpenAI error envelope when the answer is one, so a run against
/// any server says why its requests failed.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace inflight::bench {

/// Bytes of a body that is not an error envelope kept in the record.
inline constexpr std::size_t error_excerpt_bytes = 200;

/// The message of an error answer: `error.message` of {"error": {"message": ...}},
/// the text of {"error": "..."}, or a top-level "message"; nullopt for anything else.
std::optional<std::string> error_message(const nlohmann::json& answer);

/// The numeric `error.code` some servers send (llama.cpp: the HTTP status); nullopt
/// when the code is absent or a name (inflight, OpenAI: "queue_full").
std::optional<int> error_status(const nlohmann::json& answer);

/// The name in `error.code` (inflight, OpenAI: "queue_full"); empty when the code is
/// absent or a number.
std::string error_code_name(const nlohmann::json& answer);
/// error_code_name of `body` parsed as JSON (empty when it is not JSON).
std::string body_error_code_name(std::string_view body);

/// "HTTP <status>: <message>": the envelope's message when `body` is one, otherwise
/// the first error_excerpt_bytes of the body on one line.
std::string http_error_text(int status, std::string_view body);

/// The first `max_bytes` of `text` on one line: control characters become spaces, runs
/// of spaces one space, and the cut never splits a UTF-8 sequence.
std::string one_line_excerpt(std::string_view text, std::size_t max_bytes);

}  // namespace inflight::bench
