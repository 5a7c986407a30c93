#include <catch2/catch.hpp>

#include "core/bench/server_error.hpp"

using namespace inflight::bench;

TEST_CASE("bench server error: the OpenAI envelope's message is the record's text", "[core][bench]") {
  // llama.cpp's llama-server, prompt longer than a slot's context.
  const std::string llama =
      R"({"error":{"code":400,"message":"request (128 tokens) exceeds the available context size (128 tokens), )"
      R"(try increasing it","type":"exceed_context_size_error","n_prompt_tokens":128,"n_ctx":128}})";
  CHECK(http_error_text(400, llama) ==
        "HTTP 400: request (128 tokens) exceeds the available context size (128 tokens), try increasing it");
  CHECK(error_status(nlohmann::json::parse(llama)) == 400);
  // inflight and OpenAI: the code is a name, not a status.
  const std::string inflight = R"({"error":{"message":"queue full","type":"rate_limit_error","param":null,"code":"queue_full"}})";
  CHECK(http_error_text(429, inflight) == "HTTP 429: queue full");
  CHECK_FALSE(error_status(nlohmann::json::parse(inflight)).has_value());
  CHECK(http_error_text(400, R"({"error":"bad prompt"})") == "HTTP 400: bad prompt");
  CHECK(http_error_text(422, R"({"message":"field required"})") == "HTTP 422: field required");
}

TEST_CASE("bench server error: a body that is no envelope is quoted, on one line and cut", "[core][bench]") {
  CHECK(http_error_text(502, "<html>\r\n<body>Bad   Gateway</body>\n</html>\n") ==
        "HTTP 502: <html> <body>Bad Gateway</body> </html>");
  CHECK(http_error_text(500, "") == "HTTP 500: (empty body)");
  // JSON without a message is quoted as it is.
  CHECK(http_error_text(400, R"({"detail":"nope"})") == R"(HTTP 400: {"detail":"nope"})");
  CHECK(http_error_text(400, R"({"error":{"code":400}})") == R"(HTTP 400: {"error":{"code":400}})");
  const std::string long_body(5000, 'x');
  CHECK(http_error_text(413, long_body) == "HTTP 413: " + std::string(error_excerpt_bytes, 'x'));
}

TEST_CASE("bench server error: an excerpt never splits a UTF-8 character", "[core][bench]") {
  // "é" is two bytes: a cut after 3 bytes of "aéé" would split the second one.
  CHECK(one_line_excerpt("a\xC3\xA9\xC3\xA9", 3) == "a\xC3\xA9");
  CHECK(one_line_excerpt("a\xC3\xA9\xC3\xA9", 4) == "a\xC3\xA9");
  CHECK(one_line_excerpt("a\xC3\xA9\xC3\xA9", 5) == "a\xC3\xA9\xC3\xA9");
  CHECK(one_line_excerpt("\xE2\x82\xAC", 2).empty());  // a lone euro sign: nothing fits
  CHECK(one_line_excerpt("  a\t\tb  ", 100) == "a b");
}
