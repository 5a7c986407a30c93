// Speculative decoding through the server: the same greedy (or seeded) request gives the
// same text with speculation off, with the deployment's drafter and with a request's own,
// over HTTP, SSE and the WebSocket; usage says how many drafted tokens were kept, and
// /metrics counts them. Against a real server driving stories260K.

#include <filesystem>
#include <thread>

#include <unistd.h>

#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

/// A passage and its start again: prompt lookup finds what follows.
const std::string copy_prompt =
    "Once upon a time, there was a little cat named Tom. Tom liked to play with his red ball in the park. "
    "One day, Tom saw a big dog. Once upon a time, there was a little cat named Tom. Tom liked to play";

json completion(const json& extra) {
  json body = {{"prompt", copy_prompt}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

/// The text and the final usage of an SSE completion stream.
std::pair<std::string, json> stream_text(int port, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const auto answer = post_json(port, "/v1/completions", body);
  REQUIRE(answer.status == 200);
  std::string text;
  json usage;
  std::size_t at = 0;
  while ((at = answer.body.find("data: ", at)) != std::string::npos) {
    const auto end = answer.body.find("\n\n", at);
    const std::string data = answer.body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") break;
    // Not operator[] on a const json: a missing key is undefined behaviour there.
    const json chunk = json::parse(data);
    if (const auto u = chunk.find("usage"); u != chunk.end() && !u->is_null()) usage = *u;
    for (const auto& c : chunk.value("choices", json::array())) text += c.value("text", "");
  }
  return {text, usage};
}

/// The text and done message of a WebSocket generate.
std::pair<std::string, json> ws_text(int port, json msg) {
  ws_client c(port);
  msg["type"] = "generate";
  msg["id"] = "g";
  c.send(msg);
  std::string text;
  for (;;) {
    const auto m = c.receive();
    if (m.value("type", "") != "token") return {text, m};
    text += m.value("text", "");
  }
}

}  // namespace

TEST_CASE("gateway speculative: greedy text is the same with every drafter, over HTTP, SSE and WebSocket",
          "[gateway][spec]") {
  if (!has_stories()) return;
  deployment d = stories_deployment();
  d.speculative.method = "ngram";
  // Draft whatever the rows cost: with learned costs a busy machine's timings may leave
  // no room for drafts, and the counts below would say nothing was drafted.
  d.speculative.learn_row_cost = false;
  served s(d);
  const auto off = post_json(s.port, "/v1/completions", completion({{"speculative", "off"}}));
  REQUIRE(off.status == 200);
  const std::string expected = off.body_json()["choices"][0]["text"];
  REQUIRE(off.body_json()["usage"]["completion_tokens"] == 64);
  CHECK_FALSE(off.body_json()["usage"].contains("completion_tokens_details"));  // nothing drafted

  const auto ngram = post_json(s.port, "/v1/completions", completion({}));  // the deployment's drafter
  REQUIRE(ngram.status == 200);
  CHECK(ngram.body_json()["choices"][0]["text"] == expected);
  const json details = ngram.body_json()["usage"]["completion_tokens_details"];
  const int kept = details["accepted_prediction_tokens"], refuted = details["rejected_prediction_tokens"];
  CHECK(kept > 0);  // the prompt's passage comes again
  CHECK(refuted >= 0);
  CHECK(kept < 64);

  const auto suffix = post_json(s.port, "/v1/completions",
                                completion({{"speculative", {{"method", "suffix"}, {"num_speculative_tokens", 7}}}}));
  REQUIRE(suffix.status == 200);
  CHECK(suffix.body_json()["choices"][0]["text"] == expected);
  CHECK(suffix.body_json()["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int>() > 0);

  const auto [streamed, usage] = stream_text(s.port, completion({}));
  CHECK(streamed == expected);
  CHECK(usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int>() > 0);

  const auto [ws, done] = ws_text(s.port, completion({}));
  REQUIRE(done["type"] == "done");
  CHECK(ws == expected);
  CHECK(done["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int>() > 0);

  // n = 2: each choice drafts on its own and keeps the greedy text.
  const auto two = post_json(s.port, "/v1/completions", completion({{"n", 2}}));
  REQUIRE(two.status == 200);
  for (const auto& c : two.body_json()["choices"]) CHECK(c["text"] == expected);

  CHECK(metric(s.port, "spec_decode_num_draft_tokens_total") > 0);
  CHECK(metric(s.port, "spec_decode_num_accepted_tokens_total") > 0);
  CHECK(metric(s.port, "spec_decode_num_accepted_tokens_total") <= metric(s.port, "spec_decode_num_draft_tokens_total"));
  CHECK(metric(s.port, "spec_decode_acceptance_length_count") == metric(s.port, "spec_decode_num_drafts_total"));
  CHECK(engine_idle(s.port));  // no KV block left behind by a refuted draft
}

TEST_CASE("gateway speculative: a seeded sampled request keeps its text, a chat too", "[gateway][spec]") {
  if (!has_stories()) return;
  deployment d = stories_deployment();
  d.speculative.method = "suffix";
  served s(d);
  const json sampled = completion({{"temperature", 0.8}, {"top_p", 0.95}, {"seed", 11}});
  json off_body = sampled;
  off_body["speculative"] = "off";
  const auto off = post_json(s.port, "/v1/completions", off_body);
  const auto on = post_json(s.port, "/v1/completions", sampled);
  REQUIRE(off.status == 200);
  REQUIRE(on.status == 200);
  CHECK(on.body_json()["choices"][0]["text"] == off.body_json()["choices"][0]["text"]);
  CHECK(on.body_json()["usage"].contains("completion_tokens_details"));

  const json chat = {{"messages", json::array({{{"role", "user"}, {"content", copy_prompt}}})},
                     {"max_tokens", 40}, {"temperature", 0}, {"logprobs", true}};
  json chat_off = chat;
  chat_off["speculative"] = "off";
  const auto a = post_json(s.port, "/v1/chat/completions", chat_off);
  const auto b = post_json(s.port, "/v1/chat/completions", chat);
  REQUIRE(a.status == 200);
  REQUIRE(b.status == 200);
  const json ca = a.body_json()["choices"][0], cb = b.body_json()["choices"][0];
  CHECK(cb["message"]["content"] == ca["message"]["content"]);
  CHECK(cb["finish_reason"] == ca["finish_reason"]);
  // Logprobs of the kept tokens are the target's, as without speculation.
  REQUIRE(cb["logprobs"]["content"].size() == ca["logprobs"]["content"].size());
  for (std::size_t i = 0; i < ca["logprobs"]["content"].size(); ++i) {
    CHECK(cb["logprobs"]["content"][i]["token"] == ca["logprobs"]["content"][i]["token"]);
    CHECK(std::abs(cb["logprobs"]["content"][i]["logprob"].get<double>() -
                   ca["logprobs"]["content"][i]["logprob"].get<double>()) < 1e-4);
  }
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway speculative: an unknown drafter or a draft too long is a 400 naming the field", "[gateway][spec]") {
  if (!has_stories()) return;
  served s(stories_deployment());
  for (const json bad : {json("eagle"), json(3), json({{"method", "medusa"}}), json({{"num_speculative_tokens", 99}})}) {
    INFO(bad.dump());
    const auto answer = post_json(s.port, "/v1/completions", completion({{"speculative", bad}}));
    CHECK(answer.status == 400);
    CHECK(answer.body.find("speculative") != std::string::npos);
  }
  // The draft drafter needs a draft model, which this server has not.
  const auto no_model = post_json(s.port, "/v1/completions", completion({{"speculative", "draft"}}));
  CHECK(no_model.status == 400);
  CHECK(no_model.body.find("speculative.draft_model") != std::string::npos);
  // A request may turn speculation on where the deployment has it off.
  const auto on = post_json(s.port, "/v1/completions", completion({{"speculative", "ngram"}}));
  REQUIRE(on.status == 200);
  CHECK(on.body_json()["usage"].contains("completion_tokens_details"));
}

TEST_CASE("gateway speculative: a draft model drafting for itself is kept almost always, with the same text",
          "[gateway][spec]") {
  if (!has_stories()) return;
  deployment d = stories_deployment();
  d.speculative.method = "draft";
  d.speculative.draft_model = d.model.path;  // the target as its own draft model
  d.speculative.learn_row_cost = false;      // draft whatever the rows cost (a tiny model)
  served s(d);
  const auto off = post_json(s.port, "/v1/completions", completion({{"speculative", "off"}}));
  const auto on = post_json(s.port, "/v1/completions", completion({}));
  REQUIRE(off.status == 200);
  REQUIRE(on.status == 200);
  CHECK(on.body_json()["choices"][0]["text"] == off.body_json()["choices"][0]["text"]);
  const json details = on.body_json()["usage"]["completion_tokens_details"];
  const int kept = details["accepted_prediction_tokens"], refuted = details["rejected_prediction_tokens"];
  CHECK(kept > 40);            // 64 tokens, most of them drafted
  CHECK(refuted * 10 <= kept);  // the same model: a refusal only where rounding flips a near tie
  const auto [streamed, usage] = stream_text(s.port, completion({}));
  CHECK(streamed == off.body_json()["choices"][0]["text"]);
  CHECK(usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int>() > 40);
  const auto [ws, done] = ws_text(s.port, completion({}));
  REQUIRE(done["type"] == "done");
  CHECK(ws == off.body_json()["choices"][0]["text"]);
  CHECK(done["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int>() > 40);
  // n = 2: two sequences of one request, each with its own draft cache.
  const auto two = post_json(s.port, "/v1/completions", completion({{"n", 2}}));
  REQUIRE(two.status == 200);
  for (const auto& c : two.body_json()["choices"]) CHECK(c["text"] == off.body_json()["choices"][0]["text"]);
  CHECK(engine_idle(s.port));
  // Its K/V lie in the kv allocator's draft space: all of it free again once idle.
  CHECK(metric(s.port, "draft_kv_cache_usage_perc") == 0);
}

TEST_CASE("gateway speculative: a draft model drafts for several streams at once, each with its own text",
          "[gateway][spec]") {
  if (!has_stories()) return;
  deployment d = stories_deployment();
  d.speculative.method = "draft";
  d.speculative.draft_model = d.model.path;
  d.speculative.learn_row_cost = false;
  served s(d);
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom went to the park", "The sun was hot",
                                            "A little bird sat on a tree"};
  std::vector<std::string> expected;
  for (const auto& p : prompts) {
    const auto off = post_json(s.port, "/v1/completions", completion({{"prompt", p}, {"speculative", "off"}}));
    REQUIRE(off.status == 200);
    expected.push_back(off.body_json()["choices"][0]["text"]);
  }
  const double drafts_before = metric(s.port, "spec_decode_num_drafts_total");
  std::vector<std::string> got(prompts.size());
  std::vector<int> kept(prompts.size(), 0);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] {
      const auto on = post_json(s.port, "/v1/completions", completion({{"prompt", prompts[i]}}));
      if (on.status != 200) return;
      got[i] = on.body_json()["choices"][0]["text"];
      kept[i] = on.body_json()["usage"]["completion_tokens_details"]["accepted_prediction_tokens"];
    });
  }
  for (auto& c : clients) c.join();
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    INFO(prompts[i]);
    CHECK(got[i] == expected[i]);
    CHECK(kept[i] > 20);
  }
  CHECK(metric(s.port, "spec_decode_num_drafts_total") > drafts_before);
  CHECK(engine_idle(s.port));
  CHECK(metric(s.port, "draft_kv_cache_usage_perc") == 0);
}

TEST_CASE("gateway speculative: a drafter plugin in the plugin directory is a method by its name", "[gateway][spec]") {
  if (!has_stories()) return;
  // A plugin directory of the shipped policies and the test drafter
  // (tests/plugins/inflight_drafter_test_recall.c: what followed in the last finished sequence).
  const auto dir = std::filesystem::temp_directory_path() / ("inflight-drafters-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& f : std::filesystem::directory_iterator(INFLIGHT_TEST_PLUGIN_DIR))
    std::filesystem::create_symlink(f.path(), dir / f.path().filename());
  const std::string plugin = "inflight_drafter_test_recall.so";
  std::filesystem::create_symlink(std::filesystem::path(INFLIGHT_TEST_ONLY_PLUGIN_DIR) / plugin, dir / plugin);
  deployment d = stories_deployment();
  d.scheduler.plugin_dir = dir.string();
  d.speculative.learn_row_cost = false;
  {
    served s(d);
    const json body = completion({{"speculative", "test_recall"}});
    const auto first = post_json(s.port, "/v1/completions", body);
    REQUIRE(first.status == 200);
    CHECK_FALSE(first.body_json()["usage"].contains("completion_tokens_details"));  // nothing to recall yet
    const auto second = post_json(s.port, "/v1/completions", body);
    REQUIRE(second.status == 200);
    CHECK(second.body_json()["choices"][0]["text"] == first.body_json()["choices"][0]["text"]);
    const json details = second.body_json()["usage"]["completion_tokens_details"];
    CHECK(details["accepted_prediction_tokens"].get<int>() > 40);
    CHECK(details["rejected_prediction_tokens"] == 0);
    // A name no drafter has passes the parser and is the engine's 400.
    const auto unknown = post_json(s.port, "/v1/completions", completion({{"speculative", "no_such_drafter"}}));
    CHECK(unknown.status == 400);
    CHECK(unknown.body.find("speculative") != std::string::npos);
    CHECK(engine_idle(s.port));
  }
  std::filesystem::remove_all(dir);
}
