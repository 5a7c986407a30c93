#pragma once
/// Server-sent events as OpenAI clients read them: every event is `data: <json>\n\n`
/// and the stream ends with `data: [DONE]\n\n`.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"

namespace inflight::gateway {

inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

/// `data: <json>\n\n`.
std::string sse_event(const nlohmann::json& payload);
/// `event: <name>\n[id: <id>\n]data: <json>\n\n`: an event a client dispatches by name
/// (Anthropic's and the Responses API's streams, the engine event feed).
std::string sse_named_event(std::string_view name, const nlohmann::json& payload, std::string_view id = {});

/// The header of a 200 text/event-stream response (HTTP/1.`version % 10`): chunked
/// transfer encoding when `is_chunked`; `Connection: close` when `is_close`.
std::string sse_response_head(unsigned version, bool is_chunked, bool is_close);
/// One chunk of chunked transfer encoding: hex size, CRLF, the bytes, CRLF.
std::string http_chunk(std::string_view bytes);
/// The last chunk, which ends a chunked body.
inline constexpr std::string_view http_last_chunk = "0\r\n\r\n";

/// The payloads of a complete SSE body, in order ("[DONE]" included). Anything that is
/// not a sequence of `data: <payload>\n\n` events is an error naming the byte offset.
result<std::vector<std::string>> try_split_sse(std::string_view body);

}  // namespace inflight::gateway
