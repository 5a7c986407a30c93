// One finish vocabulary (core finish_name(), docs/http-api.md#finish-reasons) on every
// transport: the names themselves, the WebSocket done message and the engine event
// feed's finished[].reason.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "actors/gateway/engine_events.hpp"
#include "actors/gateway/ws_message.hpp"
#include "core/engine/sched/sequence.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

const std::vector<std::pair<finish_reason, std::string>> vocabulary = {
    {finish_reason::stop, "stop"},           {finish_reason::length, "length"}, {finish_reason::cancelled, "cancelled"},
    {finish_reason::aborted, "abort"},       {finish_reason::error, "error"},
};

/// The reason of the one finished sequence of a step event's payload.
std::string feed_reason(finish_reason r) {
  step_summary s;
  s.finished.push_back({7, r});
  const std::string text = step_event_text(s);
  const auto data = text.find("data: ");
  REQUIRE(data != std::string::npos);
  const json payload = json::parse(text.substr(data + 6));
  REQUIRE(payload["finished"].size() == 1);
  CHECK(payload["finished"][0]["id"] == 7);
  return payload["finished"][0]["reason"].get<std::string>();
}

}  // namespace

TEST_CASE("finish vocabulary: one name per engine reason, the same on every transport", "[gateway][finish]") {
  for (const auto& [reason, name] : vocabulary) {
    INFO(name);
    CHECK(finish_name(reason) == name);
    CHECK(feed_reason(reason) == name);  // /v1/engine/events said "aborted" before
    finish_event ev;
    ev.reason = reason;
    ev.prompt_tokens = 3;
    ev.completion_tokens = 2;
    const json done = ws_done_message("a", finish_name(reason), ev);
    CHECK(done["type"] == "done");
    CHECK(done["id"] == "a");
    CHECK(done["finish_reason"] == name);
    CHECK(done["usage"]["total_tokens"] == 5);
  }
  CHECK(std::string(tool_calls_finish_name) == "tool_calls");
  // Metrics keep vLLM's labels: a cancel is an abort there.
  CHECK(std::string(metrics_label(finish_reason::cancelled)) == "abort");
  CHECK(std::string(metrics_label(finish_reason::aborted)) == "abort");
  CHECK(std::string(metrics_label(finish_reason::length)) == "length");
}

TEST_CASE("finish vocabulary: WebSocket token and error messages", "[gateway][finish][ws]") {
  const json token = ws_token_message(7, "hi", {10, 11}, 3, nullptr);
  CHECK(token == json::parse(R"({"type": "token", "id": 7, "text": "hi", "token_ids": [10, 11], "index": 3})"));
  const json with_lp = ws_token_message(7, "", {10}, 0, json::array({{{"token", "x"}}}));
  CHECK(with_lp["logprobs"].size() == 1);
  finish_event ev;
  ev.reason = finish_reason::aborted;
  ev.cause = error{errc::timeout, "the request deadline passed"};
  CHECK(ws_done_message("a", finish_name(ev.reason), ev)["message"] == "the request deadline passed");
  const json refused = ws_error_message("a", api_error{429, "rate_limit_error", "full", {}, "queue_full"}, 5);
  CHECK(refused["retry_after_s"] == 5);
  CHECK_FALSE(ws_error_message("a", bad_request("x"), 5).contains("retry_after_s"));
  // A server that cannot serve right now (draining, no engine behind a router): try later.
  CHECK(ws_error_message("a", to_api_error({errc::unavailable, "no engine"}), 5)["retry_after_s"] == 5);
  CHECK(ws_error_message("a", to_api_error({errc::shutting_down, "bye"}), 5)["retry_after_s"] == 5);
}
