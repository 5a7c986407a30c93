// The HTTP API against a real server on a loopback port, driving stories260K.
#include <thread>

#include "actors/gateway/served_model.hpp"
#include "actors/gateway/sse.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// The engine's own greedy text for `prompt` tokens.
std::string engine_text(engine& eng, const std::vector<token_id>& prompt, int max_tokens) {
  generate_request r;
  r.prompt = prompt;
  r.params.temperature = 0.0f;
  r.params.max_tokens = max_tokens;
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng.submit(r, sink).has_value());
  REQUIRE(sink->wait());
  return sink->text();
}

/// The SSE payloads of a streamed body, checked byte for byte: `data: <json>\n\n`
/// events, the last one `data: [DONE]\n\n`.
std::vector<json> sse_payloads(const std::string& body) {
  auto parts = gateway::try_split_sse(body);
  if (!parts) FAIL(parts.error().message);
  REQUIRE(parts->size() >= 2);
  CHECK(parts->back() == "[DONE]");
  CHECK(body.ends_with("\n\ndata: [DONE]\n\n"));
  std::vector<json> out;
  for (std::size_t i = 0; i + 1 < parts->size(); ++i) out.push_back(json::parse((*parts)[i]));
  return out;
}

std::string streamed_text(const std::vector<json>& chunks, bool is_chat) {
  std::string text;
  for (const auto& c : chunks) {
    for (const auto& ch : c["choices"]) {
      if (is_chat) {
        if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
      } else {
        text += ch["text"].get<std::string>();
      }
    }
  }
  return text;
}

std::vector<token_id> stories_tokens(engine& eng, const std::string& text) {
  return eng.model().tok->encode(text, eng.model().tok->adds_bos());
}

}  // namespace

TEST_CASE("gateway http: completions, streamed and not, equal the engine's greedy text", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const std::string prompt = "Once upon a time";
  const auto expected = engine_text(*s.eng, stories_tokens(*s.eng, prompt), 40);
  REQUIRE(expected.size() > 20);

  auto plain = post_json(s.port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}});
  REQUIRE(plain.status == 200);
  CHECK(plain.content_type == "application/json");
  const auto body = plain.body_json();
  CHECK(body["object"] == "text_completion");
  CHECK(body["model"] == "stories260K");
  CHECK(body["id"].get<std::string>().starts_with("cmpl-"));
  CHECK(body["choices"][0]["text"] == expected);
  CHECK(body["choices"][0]["finish_reason"] == "length");
  CHECK(body["usage"] == json{{"prompt_tokens", 5}, {"completion_tokens", 40}, {"total_tokens", 45},
                              {"prompt_tokens_details", {{"cached_tokens", 0}}}});

  auto streamed = post_json(s.port, "/v1/completions",
                            {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true},
                             {"stream_options", {{"include_usage", true}}}});
  REQUIRE(streamed.status == 200);
  CHECK(streamed.content_type.starts_with("text/event-stream"));
  const auto chunks = sse_payloads(streamed.body);
  REQUIRE(chunks.size() >= 3);
  CHECK(streamed_text(chunks, false) == expected);
  for (const auto& c : chunks) CHECK(c["id"] == chunks.front()["id"]);
  const auto& last = chunks[chunks.size() - 2];
  CHECK(last["choices"][0]["finish_reason"] == "length");
  CHECK(chunks.back()["choices"] == json::array());
  CHECK(chunks.back()["usage"]["completion_tokens"] == 40);
  for (std::size_t i = 0; i + 2 < chunks.size(); ++i) CHECK(chunks[i]["choices"][0]["finish_reason"].is_null());

  // The same prompt as token ids, and echo.
  auto ids = post_json(s.port, "/v1/completions",
                       {{"prompt", stories_tokens(*s.eng, prompt)}, {"max_tokens", 40}, {"temperature", 0}, {"echo", true}});
  REQUIRE(ids.status == 200);
  CHECK(ids.body_json()["choices"][0]["text"] == prompt + expected);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: chat completions use the plain fallback template", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const json messages = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});
  const std::string rendered = "user: Tell me a story\nassistant:";
  const auto expected = engine_text(*s.eng, stories_tokens(*s.eng, rendered), 24);

  auto plain = post_json(s.port, "/v1/chat/completions",
                         {{"messages", messages}, {"max_tokens", 24}, {"temperature", 0}, {"model", "stories260K"}});
  REQUIRE(plain.status == 200);
  const auto body = plain.body_json();
  CHECK(body["object"] == "chat.completion");
  CHECK(body["choices"][0]["message"]["role"] == "assistant");
  CHECK(body["choices"][0]["message"]["content"] == expected);

  auto streamed = post_json(s.port, "/v1/chat/completions",
                            {{"messages", messages}, {"max_tokens", 24}, {"temperature", 0}, {"stream", true}});
  REQUIRE(streamed.status == 200);
  const auto chunks = sse_payloads(streamed.body);
  CHECK(chunks.front()["object"] == "chat.completion.chunk");
  CHECK(chunks.front()["choices"][0]["delta"]["role"] == "assistant");
  CHECK(streamed_text(chunks, true) == expected);
  CHECK(chunks.back()["choices"][0]["finish_reason"] == "length");  // no usage chunk unless asked

  // Without max_tokens a chat runs to EOS or the end of the context.
  auto open = post_json(s.port, "/v1/chat/completions", {{"messages", messages}, {"temperature", 0}});
  REQUIRE(open.status == 200);
  const auto usage = open.body_json()["usage"];
  const auto reason = open.body_json()["choices"][0]["finish_reason"];
  CHECK((reason == "stop" || usage["total_tokens"] == s.eng->model().max_context));
}

TEST_CASE("gateway http: n choices, several prompts, logprobs and stop strings", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  auto multi = post_json(s.port, "/v1/completions",
                         {{"prompt", {"Once upon a time", "The cat"}}, {"n", 3}, {"max_tokens", 8}, {"seed", 7},
                          {"stream", true}});
  REQUIRE(multi.status == 200);
  const auto chunks = sse_payloads(multi.body);
  std::map<int, int> finishes;
  for (const auto& c : chunks)
    for (const auto& ch : c["choices"])
      if (!ch["finish_reason"].is_null()) ++finishes[ch["index"].get<int>()];
  CHECK(finishes.size() == 6);
  for (const auto& [index, count] : finishes) CHECK(count == 1);

  auto lp = post_json(s.port, "/v1/completions",
                      {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}});
  REQUIRE(lp.status == 200);
  const auto logprobs = lp.body_json()["choices"][0]["logprobs"];
  REQUIRE(logprobs["tokens"].size() == 6);
  std::string joined;
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(logprobs["token_logprobs"][i].get<double>() <= 0.0);
    CHECK(logprobs["top_logprobs"][i].size() <= 2);
    CHECK(logprobs["text_offset"][i] == int(joined.size()));
    joined += logprobs["tokens"][i].get<std::string>();
  }
  CHECK(joined == lp.body_json()["choices"][0]["text"]);

  const auto full = engine_text(*s.eng, stories_tokens(*s.eng, "Once upon a time"), 30);
  const auto cut = full.find("Lily");
  REQUIRE(cut != std::string::npos);
  auto stopped = post_json(s.port, "/v1/completions",
                           {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}, {"stop", {"Lily"}}});
  REQUIRE(stopped.status == 200);
  CHECK(stopped.body_json()["choices"][0]["text"] == full.substr(0, cut));
  CHECK(stopped.body_json()["choices"][0]["finish_reason"] == "stop");
  // The stop string completes with the last token max_tokens allows: the engine ends
  // the sequence for length in that very step, and the client still sees "stop".
  int num_to_stop = 1;
  while (engine_text(*s.eng, stories_tokens(*s.eng, "Once upon a time"), num_to_stop).find("Lily") == std::string::npos)
    ++num_to_stop;
  auto at_limit = post_json(s.port, "/v1/completions",
                            {{"prompt", "Once upon a time"}, {"max_tokens", num_to_stop}, {"temperature", 0},
                             {"stop", {"Lily"}}});
  REQUIRE(at_limit.status == 200);
  CHECK(at_limit.body_json()["choices"][0]["text"] == full.substr(0, cut));
  CHECK(at_limit.body_json()["choices"][0]["finish_reason"] == "stop");
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway http: models, health, version, metrics, tokenize", "[gateway][http]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  auto models = get(s.port, "/v1/models");
  REQUIRE(models.status == 200);
  CHECK(models.body_json()["data"][0]["id"] == "stories260K");
  CHECK(get(s.port, "/v1/models/stories260K").status == 200);
  CHECK(get(s.port, "/v1/models/other").status == 404);
  CHECK(get(s.port, "/health").status == 200);
  CHECK(get(s.port, "/version").body_json()["version"] == "test");

  auto tok = post_json(s.port, "/tokenize", {{"prompt", "Once upon a time"}});
  REQUIRE(tok.status == 200);
  CHECK(tok.body_json()["tokens"] == json(stories_tokens(*s.eng, "Once upon a time")));
  CHECK(tok.body_json()["count"] == 5);
  CHECK(tok.body_json()["max_model_len"] == 512);
  auto detok = post_json(s.port, "/detokenize", {{"tokens", tok.body_json()["tokens"]}});
  CHECK(detok.body_json()["prompt"] == "Once upon a time");

  auto metrics = get(s.port, "/metrics");
  CHECK(metrics.content_type == "text/plain; version=0.0.4; charset=utf-8");
  const double before = metric(s.port, "generation_tokens_total");
  const double prompt_before = metric(s.port, "prompt_tokens_total");
  auto r = post_json(s.port, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"ignore_eos", true}});
  REQUIRE(r.status == 200);
  CHECK(metric(s.port, "generation_tokens_total") == before + 12);
  CHECK(metric(s.port, "prompt_tokens_total") == prompt_before + 5);
  CHECK(metric(s.port, "request_success_total{model_name=\"stories260K\",finished_reason=\"length\"}") >= 1);
}

TEST_CASE("gateway http: a client that goes away mid-stream frees its KV blocks", "[gateway][http][cancel]") {
  if (!has_stories()) return;
  auto d = stories_deployment();
  d.debug.step_delay_s = 0.01;  // 480 tokens take 4.8 s at least: still running when the client leaves
  served s(d);
  const double aborted = metric(s.port, "request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"}");
  for (bool is_streaming : {true, false}) {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port)));
    const std::string body = json{{"prompt", "Once upon a time"}, {"max_tokens", 480}, {"ignore_eos", true},
                                  {"stream", is_streaming}}.dump();
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    net::write(stream.socket(), net::buffer(req));
    if (is_streaming) {
      std::string seen;
      char buf[1024];
      while (seen.find("data: ") == std::string::npos) seen.append(buf, stream.read_some(net::buffer(buf)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(metric_reaches(s.port, "num_requests_running", 1));
    CHECK(metric(s.port, "kv_cache_usage_perc") > 0);
    stream.socket().close();
    CHECK(engine_idle(s.port));
  }
  CHECK(metric(s.port, "request_success_total{model_name=\"stories260K\",finished_reason=\"abort\"}") == aborted + 2);
  CHECK(get(s.port, "/health").status == 200);
}

TEST_CASE("gateway http: cache_salt and usage.prompt_tokens_details.cached_tokens", "[gateway][http][prefix]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in "
                             "the park with her mom and her big red ball.";
  auto ask = [&](const json& extra) {
    json body = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
    if (extra.is_object()) body.update(extra);  // {} is null
    return post_json(s.port, "/v1/completions", body);
  };
  auto cached_of = [](const http_answer& a) { return a.body_json()["usage"]["prompt_tokens_details"]["cached_tokens"]; };
  auto first = ask({});
  REQUIRE(first.status == 200);
  CHECK(cached_of(first) == 0);
  const int num_prompt = first.body_json()["usage"]["prompt_tokens"];
  const int expected = (num_prompt - 1) / 16 * 16;  // whole blocks, never the last token
  REQUIRE(expected >= 16);
  auto again = ask({});
  CHECK(cached_of(again) == expected);
  CHECK(again.body_json()["choices"][0]["text"] == first.body_json()["choices"][0]["text"]);
  // another salt shares nothing; the same salt again does
  CHECK(cached_of(ask({{"cache_salt", "tenant-a"}})) == 0);
  CHECK(cached_of(ask({{"cache_salt", "tenant-b"}})) == 0);
  CHECK(cached_of(ask({{"cache_salt", "tenant-a"}})) == expected);
  // the final usage chunk of a stream carries it too
  auto streamed = ask({{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  REQUIRE(streamed.status == 200);
  const auto chunks = sse_payloads(streamed.body);
  CHECK(chunks.back()["usage"]["prompt_tokens_details"]["cached_tokens"] == expected);
  for (const json& bad : {json(""), json(5)}) {
    auto refused = ask({{"cache_salt", bad}});
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["param"] == "cache_salt");
  }
  CHECK(metric(s.port, "prefix_cache_hits_total") == 3 * expected);
  CHECK(metric(s.port, "prefix_cache_queries_total") == 6 * num_prompt);
}
