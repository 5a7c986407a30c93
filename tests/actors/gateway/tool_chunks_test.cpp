// Streamed chat choices read for tool calls (actors/gateway/tool_chunks): the chunks a
// client receives, reassembled as the openai SDKs do.
#include <catch2/catch.hpp>

#include "actors/gateway/tool_chunks.hpp"

using namespace inflight;
using namespace inflight::gateway;
using nlohmann::json;

namespace {

struct client_view {
  std::string content;
  json calls = json::array();  ///< [{id, type, function: {name, arguments}}]
  std::string finish_reason;
  int num_chunks = 0;
};

void read(client_view& v, const std::vector<json>& chunks) {
  for (const auto& chunk : chunks) {
    ++v.num_chunks;
    CHECK(chunk["object"] == "chat.completion.chunk");
    CHECK(chunk["id"] == "chatcmpl-1");
    const json& choice = chunk["choices"][0];
    CHECK(choice["index"] == 2);
    if (!choice["finish_reason"].is_null()) v.finish_reason = choice["finish_reason"];
    const json& delta = choice["delta"];
    if (delta.contains("content")) v.content += delta["content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    REQUIRE(delta["tool_calls"].size() == 1);
    const json& piece = delta["tool_calls"][0];
    const std::size_t index = piece["index"];
    if (piece.contains("id")) {
      REQUIRE(index == v.calls.size());
      CHECK(piece["type"] == "function");
      CHECK(piece["function"]["arguments"] == "");
      v.calls.push_back({{"id", piece["id"]}, {"type", "function"},
                         {"function", {{"name", piece["function"]["name"]}, {"arguments", ""}}}});
    } else {
      CHECK_FALSE(piece["function"].contains("name"));
    }
    REQUIRE(index < v.calls.size());
    v.calls[index]["function"]["arguments"] =
        v.calls[index]["function"]["arguments"].get<std::string>() + piece["function"]["arguments"].get<std::string>();
  }
}

client_view stream(tool_call_format format, const std::vector<std::string>& pieces, const char* engine_reason) {
  tool_chunk_writer w(format, {"chatcmpl-1", 42, "m"}, 2);
  client_view v;
  for (const auto& p : pieces) read(v, w.push(p, nullptr));
  read(v, w.finish(engine_reason));
  return v;
}

}  // namespace

TEST_CASE("tool chunks: hermes calls stream as OpenAI tool_calls deltas", "[gateway][tools][stream]") {
  const auto v = stream(tool_call_format::hermes,
                        {"Checking", ".\n<tool", "_call>\n{\"name\": \"get_weather\", \"argu", "ments\": {\"city\": \"Os",
                         "lo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
                        "stop");
  CHECK(v.content == "Checking.");
  REQUIRE(v.calls.size() == 2);
  CHECK(v.calls[0]["function"]["name"] == "get_weather");
  CHECK(v.calls[0]["function"]["arguments"] == "{\"city\": \"Oslo\"}");
  CHECK(v.calls[1]["function"]["name"] == "get_time");
  CHECK(v.calls[1]["function"]["arguments"] == "{}");
  CHECK(v.calls[0]["id"].get<std::string>().starts_with("call_"));
  CHECK(v.calls[0]["id"] != v.calls[1]["id"]);
  CHECK(v.finish_reason == "tool_calls");
}

TEST_CASE("tool chunks: text stays content, a cut-off call keeps the engine's reason", "[gateway][tools][stream]") {
  const auto text = stream(tool_call_format::json, {"Once upon", " a time {", "}\n"}, "length");
  CHECK(text.content == "Once upon a time {}\n");
  CHECK(text.calls.empty());
  CHECK(text.finish_reason == "length");

  const auto cut = stream(tool_call_format::json, {"{\"name\": \"f\", \"arguments\": {\"q\": \"ab"}, "length");
  CHECK(cut.content.empty());
  REQUIRE(cut.calls.size() == 1);
  CHECK(cut.calls[0]["function"]["arguments"] == "{\"q\": \"ab");
  CHECK(cut.finish_reason == "length");

  // Logprobs ride on a chunk even when its text is held back.
  tool_chunk_writer w(tool_call_format::json, {"chatcmpl-1", 42, "m"}, 0);
  const auto chunks = w.push("{", json::array({{{"token", "{"}, {"logprob", -0.1}}}));
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0]["choices"][0]["delta"] == json::object());
  CHECK(chunks[0]["choices"][0]["logprobs"]["content"][0]["token"] == "{");
}
