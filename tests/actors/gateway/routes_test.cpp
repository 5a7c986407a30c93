// The route table (actors/gateway/routes.cpp) without sockets: which route a method and
// path take, and which paths answer without an API key.
#include <catch2/catch.hpp>

#include "actors/gateway/routes.hpp"

using namespace inflight;
using namespace inflight::gateway;

TEST_CASE("routes: each method and path takes its route, and only its own method", "[gateway][routes]") {
  CHECK(classify("POST", "/v1/completions") == route_kind::completion);
  CHECK(classify("POST", "/v1/chat/completions") == route_kind::chat);
  CHECK(classify("GET", "/v1/ws") == route_kind::websocket);
  CHECK(classify("GET", "/v1/engine/events") == route_kind::engine_events);
  for (const char* path : {"/v1/rerank", "/rerank", "/v2/rerank"}) CHECK(classify("POST", path) == route_kind::rerank);
  for (const char* path : {"/v1/score", "/score"}) CHECK(classify("POST", path) == route_kind::score);
  for (const char* path : {"/v1/embeddings", "/embeddings"}) CHECK(classify("POST", path) == route_kind::embeddings);
  CHECK(classify("POST", "/v1/messages") == route_kind::messages);
  CHECK(classify("POST", "/v1/messages/count_tokens") == route_kind::count_tokens);
  CHECK(classify("GET", "/v1/messages") == route_kind::other);
  CHECK(classify("GET", "/health") == route_kind::health);
  CHECK(classify("GET", "/metrics") == route_kind::metrics);
  CHECK(classify("GET", "/v1/models") == route_kind::models);
  CHECK(classify("GET", "/v1/models/stories260K") == route_kind::model);
  CHECK(classify("GET", "/version") == route_kind::version);
  for (const char* path : {"/tokenize", "/v1/tokenize"}) CHECK(classify("POST", path) == route_kind::tokenize);
  for (const char* path : {"/detokenize", "/v1/detokenize"}) CHECK(classify("POST", path) == route_kind::detokenize);

  // Another method, an unknown path, a path that only starts like a route: no route.
  CHECK(classify("GET", "/v1/completions") == route_kind::other);
  CHECK(classify("PUT", "/tokenize") == route_kind::other);
  CHECK(classify("POST", "/health") == route_kind::other);
  CHECK(classify("GET", "/v1/completions/x") == route_kind::other);
  CHECK(classify("GET", "/nope") == route_kind::other);
  CHECK(classify("GET", "/") == route_kind::other);  // the web UI: answer()'s fallback
}

TEST_CASE("routes: HEAD takes the GET routes answered at once, not the event stream", "[gateway][routes]") {
  CHECK(classify("HEAD", "/health") == route_kind::health);
  CHECK(classify("HEAD", "/metrics") == route_kind::metrics);
  CHECK(classify("HEAD", "/v1/models/x") == route_kind::model);
  CHECK(classify("HEAD", "/v1/ws") == route_kind::websocket);  // 426: no upgrade
  CHECK(classify("HEAD", "/v1/engine/events") == route_kind::other);
  CHECK(classify("HEAD", "/v1/completions") == route_kind::other);
}

TEST_CASE("routes: /health, the web UI and /metrics with metrics_open answer without a key", "[gateway][routes]") {
  server_settings closed, open;
  open.metrics_open = true;
  for (const char* path : {"/health", "/", "/index.html", "/ui/app.js"}) {
    INFO(path);
    CHECK(is_open_route(path, closed));
  }
  CHECK_FALSE(is_open_route("/metrics", closed));
  CHECK(is_open_route("/metrics", open));
  for (const char* path : {"/v1/completions", "/v1/models", "/v1/models/x", "/v1/ws", "/v1/engine/events", "/tokenize",
                           "/version", "/index.htm", "/uix"}) {
    INFO(path);
    CHECK_FALSE(is_open_route(path, open));
  }
}
