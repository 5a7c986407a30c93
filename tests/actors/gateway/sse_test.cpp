// SSE response framing (actors/gateway/sse.*): the header of a streamed response and
// chunked transfer encoding, written by hand since session_writer writes bytes.
#include <catch2/catch.hpp>

#include "actors/gateway/sse.hpp"

using namespace inflight::gateway;

TEST_CASE("sse framing: chunks carry their size in hex, the header names the encoding", "[gateway][sse]") {
  CHECK(http_chunk("abc") == "3\r\nabc\r\n");
  CHECK(http_chunk(std::string(300, 'x')) == "12c\r\n" + std::string(300, 'x') + "\r\n");
  CHECK(http_last_chunk == "0\r\n\r\n");
  const std::string chunked = sse_response_head(11, true, false);
  CHECK(chunked.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(chunked.find("Content-Type: text/event-stream; charset=utf-8\r\n") != std::string::npos);
  CHECK(chunked.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
  CHECK(chunked.find("Connection: close") == std::string::npos);
  CHECK(chunked.substr(chunked.size() - 4) == "\r\n\r\n");
  const std::string closing = sse_response_head(10, false, true);
  CHECK(closing.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
  CHECK(closing.find("Transfer-Encoding") == std::string::npos);
  CHECK(closing.find("Connection: close\r\n") != std::string::npos);
}
