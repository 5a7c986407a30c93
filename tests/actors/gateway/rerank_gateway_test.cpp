// /v1/rerank and /v1/score against a real server (a Qwen3-shaped dummy model, one-byte
// yes/no words): scores equal the engine's own, the shapes and aliases, bad input, a
// model that cannot rerank, and KV blocks freed after a client leaves.
#include <cmath>
#include <thread>

#include "tests/actors/engine/rerank_fixture.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const std::vector<std::string> docs = {"cows say moo", "the sky is blue", "", "moo is what a cow says, mostly",
                                       "fish swim"};

/// The engine's score of one document, submitted directly.
double engine_score(engine& eng, const reranker& r, const std::string& query, const std::string& doc) {
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng.submit(scoring_request(r, query, doc), sink).has_value());
  REQUIRE(sink->wait());
  const auto& rows = sink->finish().row_logits;
  REQUIRE(rows.size() == 2);
  return reranker::score(rows[0], rows[1]);
}

/// `n` documents of `length` bytes that differ from their first byte on, so none finds
/// another's blocks in the prefix cache: scoring them takes many steps.
std::vector<std::string> distinct_documents(int n, int length) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.emplace_back(std::size_t(length), char('a' + i));
  return out;
}

}  // namespace

TEST_CASE("gateway rerank: scores, order, top_n, documents, usage and every alias", "[gateway][rerank]") {
  const auto d = qwen3_scoring_deployment();
  served s(d);
  const auto r = make_reranker(d, *s.eng);
  std::vector<double> want;
  int num_tokens = 0;
  for (const auto& doc : docs) {
    want.push_back(engine_score(*s.eng, r, "what does a cow say?", doc));
    num_tokens += int(r.encode(r.encode_prefix("what does a cow say?"), "what does a cow say?", doc).tokens.size());
  }
  for (const char* path : {"/v1/rerank", "/rerank", "/v2/rerank"}) {
    INFO(path);
    const json body = {{"model", "dummy"}, {"query", "what does a cow say?"}, {"documents", docs}};
    const auto a = post_json(s.port, path, body);
    REQUIRE(a.status == 200);
    const auto j = a.body_json();
    CHECK(j["id"].get<std::string>().starts_with("rerank-"));
    CHECK(j["model"] == "dummy");
    CHECK(j["usage"]["prompt_tokens"] == num_tokens);
    CHECK(j["usage"]["total_tokens"] == num_tokens);
    REQUIRE(j["results"].size() == docs.size());
    double previous = 2.0;
    std::vector<bool> seen(docs.size(), false);
    for (const auto& item : j["results"]) {
      const int index = item["index"];
      const double score = item["relevance_score"];
      CHECK(score <= previous);  // highest first
      previous = score;
      CHECK(score == Approx(want[std::size_t(index)]).margin(1e-5));
      CHECK(item["document"]["text"] == docs[std::size_t(index)]);
      seen[std::size_t(index)] = true;
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  }
  const json top = {{"query", "what does a cow say?"}, {"documents", {docs[0], json{{"text", docs[1]}}, docs[3]}},
                    {"top_n", 2}, {"return_documents", false}};
  const auto t = post_json(s.port, "/v1/rerank", top).body_json();
  REQUIRE(t["results"].size() == 2);
  CHECK_FALSE(t["results"][0].contains("document"));
  const double best = std::max({want[0], want[1], want[3]});
  CHECK(t["results"][0]["relevance_score"].get<double>() == Approx(best).margin(1e-5));
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway rerank: the query's prefix comes from the prefix cache, counted in usage, salts keep apart",
          "[gateway][rerank][prefix]") {
  const auto d = qwen3_scoring_deployment();
  served s(d);
  const auto r = make_reranker(d, *s.eng);
  const std::string query = "what does a cow say?";
  const int num_prefix_blocks = int(r.encode_prefix(query).size()) / d.engine.block_size;
  REQUIRE(num_prefix_blocks > 0);
  const auto rerank = [&](const std::vector<std::string>& documents, const std::string& salt) {
    json body = {{"query", query}, {"documents", documents}};
    if (!salt.empty()) body["cache_salt"] = salt;
    const auto a = post_json(s.port, "/v1/rerank", body);
    REQUIRE(a.status == 200);
    return a.body_json();
  };
  const auto first = rerank({docs[0]}, "");
  CHECK(first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);  // a cold cache
  // Every document of the next request finds at least the query's prefix blocks.
  const auto next = rerank(docs, "");
  CHECK(next["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >=
        int(docs.size()) * num_prefix_blocks * d.engine.block_size);
  for (const auto& item : next["results"]) {
    const int index = item["index"];
    CHECK(item["relevance_score"].get<double>() == Approx(engine_score(*s.eng, r, query, docs[std::size_t(index)])).margin(1e-5));
  }
  // Another tenant's salt shares nothing with the blocks above.
  const auto salted = rerank({docs[0]}, "tenant-b");
  CHECK(salted["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);
  CHECK(salted["results"][0]["relevance_score"].get<double>() ==
        Approx(first["results"][0]["relevance_score"].get<double>()).margin(1e-5));
  const auto score = post_json(s.port, "/v1/score", {{"text_1", query}, {"text_2", docs[1]}}).body_json();
  CHECK(score["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >= num_prefix_blocks * d.engine.block_size);
  CHECK(post_json(s.port, "/v1/rerank", {{"query", "q"}, {"documents", {"a"}}, {"cache_salt", ""}}).status == 400);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway score: 1:1, 1:N and N:N in input order", "[gateway][rerank]") {
  const auto d = qwen3_scoring_deployment();
  served s(d);
  const auto r = make_reranker(d, *s.eng);
  for (const char* path : {"/v1/score", "/score"}) {
    const auto one = post_json(s.port, path, {{"text_1", "q"}, {"text_2", "cows say moo"}}).body_json();
    CHECK(one["object"] == "list");
    CHECK(one["id"].get<std::string>().starts_with("score-"));
    CHECK(one["created"].is_number_integer());
    REQUIRE(one["data"].size() == 1);
    CHECK(one["data"][0]["object"] == "score");
    CHECK(one["data"][0]["score"].get<double>() == Approx(engine_score(*s.eng, r, "q", "cows say moo")).margin(1e-5));
  }
  const auto fan = post_json(s.port, "/v1/score", {{"text_1", {"q"}}, {"text_2", docs}}).body_json();
  REQUIRE(fan["data"].size() == docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    CHECK(fan["data"][i]["index"] == i);
    CHECK(fan["data"][i]["score"].get<double>() == Approx(engine_score(*s.eng, r, "q", docs[i])).margin(1e-5));
  }
  const auto pairs = post_json(s.port, "/v1/score", {{"text_1", {"a", "b"}}, {"text_2", {"c", "d"}}}).body_json();
  REQUIRE(pairs["data"].size() == 2);
  CHECK(pairs["data"][1]["score"].get<double>() == Approx(engine_score(*s.eng, r, "b", "d")).margin(1e-5));
  CHECK(pairs["usage"]["completion_tokens"] == 0);
}

TEST_CASE("gateway rerank: bad input gets the OpenAI envelope, the server stays up", "[gateway][rerank]") {
  auto d = qwen3_scoring_deployment();
  d.rerank.max_documents = 4;
  d.model.max_context = 128;
  served s(d);
  const std::string long_doc(200, 'x');
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"query", "q"}, {"documents", json::array()}}, "documents"},
      {{{"query", "q"}, {"documents", {"a", "b", "c", "d", "e"}}}, "documents"},
      {{{"query", "q"}, {"documents", {long_doc}}}, "documents"},
      {{{"query", 1}, {"documents", {"a"}}}, "query"},
      {{{"query", "q"}, {"documents", {1}}}, "documents"},
  };
  for (const auto& [body, param] : cases) {
    INFO(body.dump());
    const auto a = post_json(s.port, "/v1/rerank", body);
    CHECK(a.status == 400);
    const auto e = a.body_json()["error"];
    CHECK(e["type"] == "invalid_request_error");
    CHECK(e["param"] == param);
  }
  const auto not_json = http_call(s.port, http::verb::post, "/v1/rerank", "{");
  CHECK(not_json.status == 400);
  CHECK(get(s.port, "/v1/rerank").status == 405);
  const auto ok = post_json(s.port, "/v1/rerank", {{"query", "q"}, {"documents", {"a"}}});
  CHECK(ok.status == 200);
}

TEST_CASE("gateway rerank: more documents than the waiting queue holds is a 400, never a partial queue",
          "[gateway][rerank]") {
  auto d = qwen3_scoring_deployment();
  d.rerank.max_documents = 1000;
  d.server.max_waiting_requests = 6;  // each document waits as one request
  served s(d);
  const auto over = post_json(s.port, "/v1/rerank", {{"query", "q"}, {"documents", distinct_documents(7, 3)}});
  CHECK(over.status == 400);
  const auto e = over.body_json()["error"];
  CHECK(e["code"] == "too_many_documents");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("at most 6") &&
                                                  Catch::Contains("server.max_waiting_requests"));
  CHECK(post_json(s.port, "/v1/score", {{"text_1", "q"}, {"text_2", distinct_documents(7, 3)}}).status == 400);
  // As many as the queue holds are scored.
  const auto full = post_json(s.port, "/v1/rerank", {{"query", "q"}, {"documents", distinct_documents(6, 3)}});
  CHECK(full.status == 200);
  CHECK(full.body_json()["results"].size() == 6);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway rerank: a tokenizer without single-token words serves 400s that say why", "[gateway][rerank]") {
  auto d = qwen3_scoring_deployment();
  d.rerank.mode = rerank_mode::automatic;
  d.rerank.yes_word = "yes";  // three byte tokens
  served s(d);
  const auto a = post_json(s.port, "/v1/rerank", {{"query", "q"}, {"documents", {"a"}}});
  CHECK(a.status == 400);
  const auto e = a.body_json()["error"];
  CHECK(e["code"] == "rerank_unavailable");
  CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("rerank.yes_word") && Catch::Contains("3 tokens"));
  CHECK(post_json(s.port, "/v1/score", {{"text_1", "q"}, {"text_2", "a"}}).status == 400);
  // Generation is unaffected.
  CHECK(post_json(s.port, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}}).status == 200);

  d.rerank.mode = rerank_mode::required;  // start-up fails
  auto eng = start_engine(d);
  auto srv = gateway::server::try_start(*eng, {false, "test"});
  REQUIRE_FALSE(srv.has_value());
  CHECK_THAT(srv.error().message, Catch::Contains("rerank.yes_word"));
  eng->shutdown(0.0);
}

TEST_CASE("gateway rerank: a client that leaves frees the KV blocks of its documents", "[gateway][rerank][cancel]") {
  auto d = qwen3_scoring_deployment("splitfuse", 4);  // slow: 4 tokens per step
  served s(d);
  {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
    const json body = {{"query", "q"}, {"documents", distinct_documents(8, 100)}};
    http::request<http::string_body> req{http::verb::post, "/v1/rerank", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = body.dump();
    req.prepare_payload();
    http::write(stream, req);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (metric(s.port, "num_requests_running") == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    REQUIRE(metric(s.port, "num_requests_running") > 0);
  }  // the connection closes with the documents still being scored
  CHECK(engine_idle(s.port, 20.0));
}

TEST_CASE("gateway rerank over the WebSocket: done carries the HTTP results, cancel and errors", "[gateway][rerank][ws]") {
  auto d = qwen3_scoring_deployment();
  served s(d);
  const json body = {{"query", "what does a cow say?"}, {"documents", docs}, {"top_n", 3}};
  const auto http = post_json(s.port, "/v1/rerank", body).body_json();
  ws_client c(s.port);
  json msg = body;
  msg["type"] = "rerank";
  msg["id"] = "r1";
  c.send(msg);
  const auto done = c.receive();
  CHECK(done["type"] == "done");
  CHECK(done["id"] == "r1");
  // The same order and scores (within float rounding: with the query's blocks now cached
  // the documents' prompts are computed in other chunks).
  REQUIRE(done["results"].size() == http["results"].size());
  for (std::size_t i = 0; i < http["results"].size(); ++i) {
    CHECK(done["results"][i]["index"] == http["results"][i]["index"]);
    CHECK(done["results"][i]["document"] == http["results"][i]["document"]);
    CHECK(done["results"][i]["relevance_score"].get<double>() ==
          Approx(http["results"][i]["relevance_score"].get<double>()).margin(1e-5));
  }
  CHECK(done["usage"]["prompt_tokens"] == http["usage"]["prompt_tokens"]);
  CHECK(done["usage"]["total_tokens"] == http["usage"]["total_tokens"]);
  // The same query again: its prefix now comes from the cache.
  CHECK(done["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >
        http["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>());

  c.send({{"type", "rerank"}, {"id", 2}, {"query", "q"}, {"documents", json::array()}});
  const auto error = c.receive();
  CHECK(error["type"] == "error");
  CHECK(error["id"] == 2);
  CHECK(error["error"]["param"] == "documents");

  // A long rerank cancelled at once ends with done / cancelled, and frees its blocks.
  c.send({{"type", "rerank"}, {"id", "long"}, {"query", "q"},
          {"documents", distinct_documents(24, 400)}});
  c.send({{"type", "cancel"}, {"id", "long"}});
  const auto cancelled = c.receive();
  CHECK(cancelled["type"] == "done");
  CHECK(cancelled["id"] == "long");
  CHECK(cancelled["finish_reason"] == "cancelled");
  CHECK(engine_idle(s.port, 20.0));
  // The id is free again, and the socket still serves.
  c.send({{"type", "rerank"}, {"id", "long"}, {"query", "q"}, {"documents", {"a"}}});
  CHECK(c.receive()["type"] == "done");
}
