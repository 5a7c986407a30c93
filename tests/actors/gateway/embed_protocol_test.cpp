// Parsing and the response shape of /v1/embeddings, without sockets: a byte-level
// tokenizer (token = byte + 3, BOS 1, EOS 2), an 8-wide model and a 64-token context.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>

#include "actors/gateway/embed_request.hpp"
#include "tests/actors/gateway/byte_model.hpp"

using namespace inflight;
using namespace inflight::gateway;
using inflight::test::byte_ids;
using nlohmann::json;

namespace {

served_model embedding_model(bool matryoshka = true) {
  embeddings_settings s;
  s.matryoshka = matryoshka;
  s.query_prefix = "Q:";
  s.max_inputs = 4;
  s.max_input_tokens = 32;
  auto m = test::byte_model({.has_grammars = false});
  test::serve_embeddings(m, s, 8);
  return m;
}

api_error parse_error(const json& body, const served_model& m) {
  auto r = try_parse_embeddings(body, m);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

/// The bytes of a base64 text (the decoder the openai clients use, written out).
std::vector<unsigned char> decode_base64(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> out;
  std::uint32_t bits = 0;
  int num_bits = 0;
  for (const char c : text) {
    if (c == '=') break;
    const auto v = alphabet.find(c);
    REQUIRE(v != std::string::npos);
    bits = (bits << 6) | std::uint32_t(v);
    num_bits += 6;
    if (num_bits >= 8) {
      num_bits -= 8;
      out.push_back((bits >> num_bits) & 0xFF);
    }
  }
  return out;
}

/// Float32 little-endian, as numpy.frombuffer(dtype="float32") reads it on any machine.
std::vector<float> floats_of(const std::vector<unsigned char>& bytes) {
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<float> out;
  for (std::size_t i = 0; i < bytes.size(); i += 4) {
    const std::uint32_t u = std::uint32_t(bytes[i]) | std::uint32_t(bytes[i + 1]) << 8 |
                            std::uint32_t(bytes[i + 2]) << 16 | std::uint32_t(bytes[i + 3]) << 24;
    out.push_back(std::bit_cast<float>(u));
  }
  return out;
}

}  // namespace

TEST_CASE("embeddings: every input shape becomes one tokenized input each, in order", "[gateway][embeddings]") {
  const auto m = embedding_model();
  auto one = try_parse_embeddings(json::parse(R"({"model": "dummy", "input": "ab"})"), m);
  REQUIRE(one.has_value());
  REQUIRE(one->num_inputs() == 1);
  CHECK(one->inputs[0] == byte_ids("ab"));
  CHECK(one->encoding == embedding_encoding::float_list);
  CHECK(one->dimensions == 0);
  auto texts = try_parse_embeddings(json::parse(R"({"input": ["ab", "c", "def"]})"), m);
  REQUIRE(texts.has_value());
  REQUIRE(texts->num_inputs() == 3);
  CHECK(texts->inputs[1] == byte_ids("c"));
  CHECK(texts->inputs[2] == byte_ids("def"));
  CHECK(texts->num_prompt_tokens() == 3 + 2 + 4);
  auto ids = try_parse_embeddings(json::parse(R"({"input": [5, 6, 258]})"), m);
  REQUIRE(ids.has_value());
  REQUIRE(ids->num_inputs() == 1);
  CHECK(ids->inputs[0] == std::vector<token_id>{5, 6, 258});  // token ids are taken as they are: no BOS
  auto lists = try_parse_embeddings(json::parse(R"({"input": [[5], [7, 8]], "encoding_format": "base64",
      "dimensions": 4, "user": "someone", "priority": 3, "cache_salt": "s"})"), m);
  REQUIRE(lists.has_value());
  REQUIRE(lists->num_inputs() == 2);
  CHECK(lists->inputs[1] == std::vector<token_id>{7, 8});
  CHECK(lists->encoding == embedding_encoding::base64);
  CHECK(lists->dimensions == 4);
  CHECK(lists->user == "someone");
  CHECK(lists->priority == 3);
  CHECK(lists->cache_salt == "s");
}

TEST_CASE("embeddings: queries get the instruction prefix, EOS is appended when set", "[gateway][embeddings]") {
  auto m = embedding_model();
  auto query = try_parse_embeddings(json::parse(R"({"input": ["ab"], "input_type": "query"})"), m);
  REQUIRE(query.has_value());
  CHECK(query->inputs[0] == byte_ids("Q:ab"));
  auto document = try_parse_embeddings(json::parse(R"({"input": "ab", "input_type": "document"})"), m);
  REQUIRE(document.has_value());
  CHECK(document->inputs[0] == byte_ids("ab"));
  auto ids = try_parse_embeddings(json::parse(R"({"input": [9, 10], "input_type": "query"})"), m);
  REQUIRE(ids.has_value());
  CHECK(ids->inputs[0] == std::vector<token_id>{9, 10});  // token ids are never prefixed
  m.embeddings->append_eos = true;
  auto with_eos = try_parse_embeddings(json::parse(R"({"input": "ab"})"), m);
  REQUIRE(with_eos.has_value());
  auto want = byte_ids("ab");
  want.push_back(byte_tokenizer::eos_token);
  CHECK(with_eos->inputs[0] == want);
}

TEST_CASE("embeddings: each bad input is a 400 naming the field", "[gateway][embeddings]") {
  const auto m = embedding_model();
  const std::string too_long(40, 'x');  // 41 tokens: over max_input_tokens (32)
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "input"},
      {R"({"input": ""})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [[]]})", "input"},
      {R"({"input": ["a", ""]})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": {"text": "a"}})", "input"},
      {R"({"input": [true]})", "input"},
      {R"({"input": ["a", 5]})", "input"},
      {R"({"input": [[1], "a"]})", "input"},
      {R"({"input": [1, 2.5]})", "input"},
      {R"({"input": [259]})", "input"},
      {R"({"input": [-1]})", "input"},
      {R"({"input": [[3], [4, 99999]]})", "input"},
      {R"({"input": ["a", "b", "c", "d", "e"]})", "input"},
      {R"({"input": ")" + too_long + R"("})", "input"},
      {R"({"input": "a", "encoding_format": "hex"})", "encoding_format"},
      {R"({"input": "a", "encoding_format": 1})", "encoding_format"},
      {R"({"input": "a", "dimensions": 0})", "dimensions"},
      {R"({"input": "a", "dimensions": -3})", "dimensions"},
      {R"({"input": "a", "dimensions": 9})", "dimensions"},
      {R"({"input": "a", "dimensions": "4"})", "dimensions"},
      {R"({"input": "a", "dimensions": 2.5})", "dimensions"},
      {R"({"input": "a", "user": 7})", "user"},
      {R"({"input": "a", "input_type": "passage"})", "input_type"},
      {R"({"input": "a", "cache_salt": ""})", "cache_salt"},
      {R"({"input": "a", "priority": "high"})", "priority"},
  };
  for (const auto& [text, param] : cases) {
    INFO(text);
    const auto e = parse_error(json::parse(text), m);
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == param);
    CHECK_FALSE(e.message.empty());
  }
  CHECK(parse_error(json::parse(R"({"input": ["a", "b", "c", "d", "e"]})"), m).code == "too_many_inputs");
  CHECK(parse_error(json::parse(R"({"input": ")" + too_long + R"("})"), m).code == "input_too_long");
  CHECK_THAT(parse_error(json::parse(R"({"input": [[3], [4, 99999]]})"), m).message,
             Catch::Contains("input[1]") && Catch::Contains("99999"));
  CHECK(parse_error(json::array({1}), m).status == 400);
  const auto wrong_model = parse_error(json::parse(R"({"input": "a", "model": "other"})"), m);
  CHECK(wrong_model.status == 404);
  CHECK(wrong_model.param == "model");
  // A model that does not allow dimensions refuses them, naming the field.
  const auto fixed = embedding_model(false);
  const auto e = parse_error(json::parse(R"({"input": "a", "dimensions": 4})"), fixed);
  CHECK(e.param == "dimensions");
  CHECK_THAT(e.message, Catch::Contains("embeddings.matryoshka"));
  // A server without embeddings says why.
  auto off = embedding_model();
  off.embeddings.reset();
  off.embeddings_unavailable = "embeddings are disabled on this server (embeddings.enabled = false)";
  const auto unavailable = parse_error(json::parse(R"({"input": "a"})"), off);
  CHECK(unavailable.code == "embeddings_unavailable");
  CHECK_THAT(unavailable.message, Catch::Contains("embeddings.enabled"));
}

TEST_CASE("embeddings: an input may fill the context, one more token is a 400", "[gateway][embeddings]") {
  auto m = embedding_model();
  m.embeddings->max_input_tokens = 1000;
  std::vector<int> full(64, 7);
  CHECK(try_parse_embeddings({{"input", full}}, m).has_value());
  full.push_back(7);
  const auto e = parse_error({{"input", full}}, m);
  CHECK(e.code == "context_length_exceeded");
  CHECK(e.param == "input");
}

TEST_CASE("embeddings response: the OpenAI shape, in input order, float or base64", "[gateway][embeddings]") {
  const auto m = embedding_model();
  auto r = try_parse_embeddings(json::parse(R"({"input": ["ab", "c"]})"), m);
  REQUIRE(r.has_value());
  const std::vector<std::vector<float>> embeddings = {{0.6f, -0.8f}, {1.0f, 0.0f}};
  const auto j = embeddings_response("dummy", *r, embeddings);
  CHECK(j["object"] == "list");
  CHECK(j["model"] == "dummy");
  CHECK(j["usage"] == json{{"prompt_tokens", 5}, {"total_tokens", 5}});
  REQUIRE(j["data"].size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(j["data"][i]["object"] == "embedding");
    CHECK(j["data"][i]["index"] == i);
    REQUIRE(j["data"][i]["embedding"].size() == 2);
    CHECK(j["data"][i]["embedding"][0].get<float>() == embeddings[i][0]);
    CHECK(j["data"][i]["embedding"][1].get<float>() == embeddings[i][1]);
  }
  r->encoding = embedding_encoding::base64;
  const auto b = embeddings_response("dummy", *r, embeddings);
  for (std::size_t i = 0; i < 2; ++i) {
    REQUIRE(b["data"][i]["embedding"].is_string());
    CHECK(floats_of(decode_base64(b["data"][i]["embedding"].get<std::string>())) == embeddings[i]);  // bit for bit
  }
}

TEST_CASE("base64 of float32 little-endian bytes, padded", "[gateway][embeddings]") {
  CHECK(base64_floats(std::vector<float>{}).empty());
  CHECK(base64_floats(std::vector<float>{1.0f}) == "AACAPw==");            // 00 00 80 3f
  CHECK(base64_floats(std::vector<float>{1.0f, -2.0f}) == "AACAPwAAAMA=");  // ... 00 00 00 c0
  CHECK(base64_floats(std::vector<float>{0.0f, 0.0f, 0.0f}) == "AAAAAAAAAAAAAAAA");
  std::vector<float> values;
  for (int i = 0; i < 37; ++i) values.push_back(float(i) * 0.37f - 5.0f);
  CHECK(floats_of(decode_base64(base64_floats(values))) == values);
}
