// /v1/embeddings against a real server (a Qwen3-shaped dummy model, byte tokenizer):
// embeddings equal the engine's own pooled states, normalised; every input shape, the
// order, usage, base64, dimensions, the limits, bad input, and the WebSocket "embed".
#include <bit>
#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "actors/gateway/served_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "tests/actors/engine/rerank_fixture.hpp"
#include "tests/actors/gateway/gateway_fixture.hpp"

using namespace inflight;
using namespace inflight::test;

namespace {

const std::vector<std::string> texts = {"cows say moo", "the sky is blue", "x", "moo is what a cow says, mostly"};

/// The engine's pooled state of one text, submitted directly, finished as the server does.
std::vector<float> engine_embedding(engine& eng, const std::vector<token_id>& prompt, int dimensions = 0,
                                    bool normalize = true,
                                    pooling_kind pooling = pooling_kind::last) {  // a dummy model states none
  generate_request req;
  req.prompt = prompt;
  req.pooling = pooling;
  auto sink = std::make_shared<collect_sink>();
  REQUIRE(eng.submit(req, sink).has_value());
  REQUIRE(sink->wait());
  REQUIRE_FALSE(sink->finish().embedding.empty());
  return finish_embedding(sink->finish().embedding, dimensions, normalize);
}

std::vector<token_id> tokens_of(engine& eng, const std::string& text) { return eng.model().tok->encode(text, true); }

std::vector<float> floats_of(const json& embedding) { return embedding.get<std::vector<float>>(); }

/// What the openai clients do with a base64 embedding: base64 -> bytes -> float32 LE.
std::vector<float> decode_base64_floats(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes;
  std::uint32_t bits = 0;
  int num_bits = 0;
  for (const char c : text) {
    if (c == '=') break;
    bits = (bits << 6) | std::uint32_t(alphabet.find(c));
    num_bits += 6;
    if (num_bits >= 8) {
      num_bits -= 8;
      bytes.push_back((bits >> num_bits) & 0xFF);
    }
  }
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<float> out;
  for (std::size_t i = 0; i < bytes.size(); i += 4) {
    out.push_back(std::bit_cast<float>(std::uint32_t(bytes[i]) | std::uint32_t(bytes[i + 1]) << 8 |
                                       std::uint32_t(bytes[i + 2]) << 16 | std::uint32_t(bytes[i + 3]) << 24));
  }
  return out;
}

double norm_of(const std::vector<float>& v) {
  double s = 0;
  for (const float x : v) s += double(x) * double(x);
  return std::sqrt(s);
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance = 1e-5) {
  REQUIRE(got.size() == want.size());
  double d = 0;
  for (std::size_t i = 0; i < got.size(); ++i) d += (double(got[i]) - double(want[i])) * (double(got[i]) - double(want[i]));
  CHECK(std::sqrt(d) <= tolerance * norm_of(want));
}

}  // namespace

TEST_CASE("gateway embeddings: every input shape, in order, with usage, equal to the engine's", "[gateway][embeddings]") {
  const auto d = qwen3_scoring_deployment();
  served s(d);
  const int width = d.model.dummy.hidden_size;
  std::vector<std::vector<token_id>> prompts;
  std::vector<std::vector<float>> want;
  int num_tokens = 0;
  for (const auto& t : texts) {
    prompts.push_back(tokens_of(*s.eng, t));
    want.push_back(engine_embedding(*s.eng, prompts.back()));
    num_tokens += int(prompts.back().size());
  }
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    INFO(path);
    const auto a = post_json(s.port, path, {{"model", "dummy"}, {"input", texts}, {"user", "u-1"}});
    REQUIRE(a.status == 200);
    const auto j = a.body_json();
    CHECK(j["object"] == "list");
    CHECK(j["model"] == "dummy");
    CHECK(j["usage"] == json{{"prompt_tokens", num_tokens}, {"total_tokens", num_tokens}});
    REQUIRE(j["data"].size() == texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      INFO("input " << i);
      CHECK(j["data"][i]["object"] == "embedding");
      CHECK(j["data"][i]["index"] == i);
      const auto got = floats_of(j["data"][i]["embedding"]);
      REQUIRE(got.size() == std::size_t(width));
      CHECK(std::abs(norm_of(got) - 1.0) < 1e-5);
      check_close(got, want[i]);
    }
  }
  // One string; one token list; a list of token lists: the same embeddings.
  const auto one = post_json(s.port, "/v1/embeddings", {{"input", texts[3]}}).body_json();
  REQUIRE(one["data"].size() == 1);
  check_close(floats_of(one["data"][0]["embedding"]), want[3]);
  CHECK(one["usage"]["prompt_tokens"] == prompts[3].size());
  const auto ids = post_json(s.port, "/v1/embeddings", {{"input", prompts[1]}}).body_json();
  REQUIRE(ids["data"].size() == 1);
  check_close(floats_of(ids["data"][0]["embedding"]), want[1]);
  const auto lists = post_json(s.port, "/v1/embeddings", {{"input", {prompts[2], prompts[0]}}}).body_json();
  REQUIRE(lists["data"].size() == 2);
  check_close(floats_of(lists["data"][0]["embedding"]), want[2]);
  check_close(floats_of(lists["data"][1]["embedding"]), want[0]);
  CHECK(lists["usage"]["total_tokens"] == prompts[2].size() + prompts[0].size());
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway embeddings: base64 decodes to the float embeddings", "[gateway][embeddings]") {
  const auto d = qwen3_scoring_deployment();
  served s(d);
  const auto floats = post_json(s.port, "/v1/embeddings", {{"input", texts}, {"encoding_format", "float"}}).body_json();
  const auto packed = post_json(s.port, "/v1/embeddings", {{"input", texts}, {"encoding_format", "base64"}}).body_json();
  REQUIRE(packed["data"].size() == texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    REQUIRE(packed["data"][i]["embedding"].is_string());
    const auto decoded = decode_base64_floats(packed["data"][i]["embedding"].get<std::string>());
    REQUIRE(decoded.size() == std::size_t(d.model.dummy.hidden_size));
    check_close(decoded, floats_of(floats["data"][i]["embedding"]), 1e-6);
  }
  CHECK(packed["usage"] == floats["usage"]);
}

TEST_CASE("gateway embeddings: dimensions cut and renormalise where allowed, normalize off", "[gateway][embeddings]") {
  auto d = qwen3_scoring_deployment();
  d.embeddings.matryoshka = true;
  {
    served s(d);
    const auto prompt = tokens_of(*s.eng, texts[0]);
    const auto a = post_json(s.port, "/v1/embeddings", {{"input", texts[0]}, {"dimensions", 16}});
    REQUIRE(a.status == 200);
    const auto got = floats_of(a.body_json()["data"][0]["embedding"]);
    REQUIRE(got.size() == 16);
    CHECK(std::abs(norm_of(got) - 1.0) < 1e-5);
    check_close(got, engine_embedding(*s.eng, prompt, 16));
    // The full width is allowed, one more is not.
    CHECK(post_json(s.port, "/v1/embeddings", {{"input", "a"}, {"dimensions", d.model.dummy.hidden_size}}).status == 200);
    const auto over = post_json(s.port, "/v1/embeddings", {{"input", "a"}, {"dimensions", d.model.dummy.hidden_size + 1}});
    CHECK(over.status == 400);
    CHECK(over.body_json()["error"]["param"] == "dimensions");
  }
  d.embeddings.matryoshka = false;
  d.embeddings.normalize = false;
  served s(d);
  const auto refused = post_json(s.port, "/v1/embeddings", {{"input", texts[0]}, {"dimensions", 16}});
  CHECK(refused.status == 400);
  CHECK(refused.body_json()["error"]["param"] == "dimensions");
  const auto raw = post_json(s.port, "/v1/embeddings", {{"input", texts[0]}}).body_json();
  const auto got = floats_of(raw["data"][0]["embedding"]);
  check_close(got, engine_embedding(*s.eng, tokens_of(*s.eng, texts[0]), 0, false));
  CHECK(std::abs(norm_of(got) - 1.0) > 1e-3);  // the final norm's scale, not a unit vector
}

TEST_CASE("gateway embeddings: limits and bad input are 400s naming the field, the server stays up",
          "[gateway][embeddings]") {
  auto d = qwen3_scoring_deployment();
  d.embeddings.max_inputs = 3;
  d.embeddings.max_input_tokens = 20;
  served s(d);
  const std::vector<std::tuple<json, std::string, std::string>> cases = {
      {{{"input", {"a", "b", "c", "d"}}}, "input", "too_many_inputs"},
      {{{"input", std::string(25, 'x')}}, "input", "input_too_long"},
      {{{"input", ""}}, "input", ""},
      {{{"input", json::array()}}, "input", ""},
      {{{"input", {1, 100000}}}, "input", ""},
      {{{"input", json::array({json::array({"a"})})}}, "input", ""},
      {{{"input", 3.5}}, "input", ""},
      {{{"input", "a"}, {"encoding_format", "binary"}}, "encoding_format", ""},
      {{{"input", "a"}, {"dimensions", -1}}, "dimensions", ""},
      {{{"input", "a"}, {"user", {1}}}, "user", ""},
  };
  for (const auto& [body, param, code] : cases) {
    INFO(body.dump());
    const auto a = post_json(s.port, "/v1/embeddings", body);
    CHECK(a.status == 400);
    const auto e = a.body_json()["error"];
    CHECK(e["type"] == "invalid_request_error");
    CHECK(e["param"] == param);
    if (!code.empty()) CHECK(e["code"] == code);
  }
  CHECK(http_call(s.port, http::verb::post, "/v1/embeddings", "{").status == 400);
  CHECK(get(s.port, "/v1/embeddings").status == 405);
  CHECK(post_json(s.port, "/v1/embeddings", {{"input", {"a", "b", "c"}}}).status == 200);
  CHECK(engine_idle(s.port));
}

TEST_CASE("gateway embeddings: more inputs than the waiting queue holds is a 400, disabled says why",
          "[gateway][embeddings]") {
  auto d = qwen3_scoring_deployment();
  d.server.max_waiting_requests = 4;  // each input waits as one request
  {
    served s(d);
    const auto over = post_json(s.port, "/v1/embeddings", {{"input", {"a", "b", "c", "d", "e"}}});
    CHECK(over.status == 400);
    const auto e = over.body_json()["error"];
    CHECK(e["code"] == "too_many_inputs");
    CHECK_THAT(e["message"].get<std::string>(), Catch::Contains("at most 4") &&
                                                    Catch::Contains("server.max_waiting_requests"));
    CHECK(post_json(s.port, "/v1/embeddings", {{"input", {"a", "b", "c", "d"}}}).status == 200);
  }
  d.embeddings.enabled = false;
  served s(d);
  const auto off = post_json(s.port, "/v1/embeddings", {{"input", "a"}});
  CHECK(off.status == 400);
  CHECK(off.body_json()["error"]["code"] == "embeddings_unavailable");
}

TEST_CASE("gateway embeddings over the WebSocket: done carries the HTTP data, cancel and errors",
          "[gateway][embeddings][ws]") {
  auto d = qwen3_scoring_deployment();
  served s(d);
  const json body = {{"input", texts}, {"encoding_format", "base64"}};
  const auto http = post_json(s.port, "/v1/embeddings", body).body_json();
  ws_client c(s.port);
  json msg = body;
  msg["type"] = "embed";
  msg["id"] = "e1";
  c.send(msg);
  const auto done = c.receive();
  CHECK(done["type"] == "done");
  CHECK(done["id"] == "e1");
  CHECK(done["object"] == "list");
  CHECK(done["usage"] == http["usage"]);
  REQUIRE(done["data"].size() == texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CHECK(done["data"][i]["index"] == i);
    check_close(decode_base64_floats(done["data"][i]["embedding"].get<std::string>()),
                decode_base64_floats(http["data"][i]["embedding"].get<std::string>()));
  }
  c.send({{"type", "embed"}, {"id", 2}, {"input", json::array()}});
  const auto error = c.receive();
  CHECK(error["type"] == "error");
  CHECK(error["id"] == 2);
  CHECK(error["error"]["param"] == "input");
  // A long embed cancelled at once ends with done / cancelled, and frees its blocks.
  std::vector<std::string> many;
  for (int i = 0; i < 24; ++i) many.emplace_back(400, char('a' + i));
  c.send({{"type", "embed"}, {"id", "long"}, {"input", many}});
  c.send({{"type", "cancel"}, {"id", "long"}});
  const auto cancelled = c.receive();
  CHECK(cancelled["type"] == "done");
  CHECK(cancelled["id"] == "long");
  CHECK(cancelled["finish_reason"] == "cancelled");
  CHECK(engine_idle(s.port, 20.0));
  c.send({{"type", "embed"}, {"id", "long"}, {"input", "a"}});
  CHECK(c.receive()["type"] == "done");
}

TEST_CASE("gateway embeddings: served on the cpu backend, off or on the cuda backend the route says why",
          "[gateway][embeddings]") {
  auto d = qwen3_scoring_deployment();
  d.server.max_waiting_requests = 100;
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  auto m = gateway::try_make_served_model(*model, d, nullptr);
  REQUIRE(m.has_value());
  REQUIRE(m->embeddings.has_value());
  CHECK(m->embedding_width == d.model.dummy.hidden_size);
  CHECK(m->max_embedding_inputs == 100);  // embeddings.max_inputs (2048), cut to the waiting queue
  d.engine.backend = "cuda";
  m = gateway::try_make_served_model(*model, d, nullptr);
  REQUIRE(m.has_value());
  CHECK_FALSE(m->embeddings.has_value());
  CHECK_THAT(m->embeddings_unavailable, Catch::Contains("cuda"));
  d.engine.backend = "cpu";
  d.embeddings.enabled = false;
  m = gateway::try_make_served_model(*model, d, nullptr);
  REQUIRE(m.has_value());
  CHECK_FALSE(m->embeddings.has_value());
  CHECK_THAT(m->embeddings_unavailable, Catch::Contains("embeddings.enabled = false"));
}

namespace {

/// The Qwen3-shaped dummy model written as a GGUF file that states `pooling_type`.
std::filesystem::path write_stating_gguf(const deployment& d, std::uint32_t pooling_type) {
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  const auto path = std::filesystem::temp_directory_path() /
                    ("inflight_pooling_" + std::to_string(::getpid()) + "_" + std::to_string(pooling_type) + ".gguf");
  gguf_model_options options;
  options.name = "embedder";
  options.pooling_type = pooling_type;
  REQUIRE(try_write_gguf_model(*model->weights, byte_gguf_vocab(model->weights->config.vocab_size), path, options)
              .has_value());
  return path;
}

/// The embedding of `text` served from `path` under embeddings.pooling = "auto", and
/// the engine's own embedding of it pooled as `pooling`.
std::pair<std::vector<float>, std::vector<float>> served_and_pooled(deployment d, const std::filesystem::path& path,
                                                                      const std::string& text, pooling_kind pooling) {
  d.model.format = "auto";
  d.model.path = path.string();
  d.rerank.mode = rerank_mode::automatic;  // the file's vocabulary decides
  REQUIRE_FALSE(d.embeddings.pooling.has_value());  // "auto"
  served s(d);
  const auto ids = tokens_of(*s.eng, text);  // token ids are embedded as they are
  const auto a = post_json(s.port, "/v1/embeddings", {{"input", ids}});
  REQUIRE(a.status == 200);
  auto got = floats_of(a.body_json()["data"][0]["embedding"]);
  return {got, engine_embedding(*s.eng, ids, 0, true, pooling)};
}

double distance_of(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
  return std::sqrt(d);
}

}  // namespace

TEST_CASE("gateway embeddings: pooling \"auto\" pools as the GGUF file's pooling_type says", "[gateway][embeddings][gguf]") {
  const auto d = qwen3_scoring_deployment();
  const std::string text = "the cow says moo, and the sky is blue";
  const auto mean_file = write_stating_gguf(d, 1);  // ggml: 1 mean
  const auto last_file = write_stating_gguf(d, 3);  // ggml: 3 last
  const auto [mean_got, mean_want] = served_and_pooled(d, mean_file, text, pooling_kind::mean);
  const auto [last_got, last_want] = served_and_pooled(d, last_file, text, pooling_kind::last);
  std::filesystem::remove(mean_file);
  std::filesystem::remove(last_file);
  check_close(mean_got, mean_want);
  check_close(last_got, last_want);
  // The same weights and input: only the stated pooling differs, and so do the embeddings.
  CHECK(distance_of(mean_got, last_got) > 0.1);
  CHECK(std::abs(norm_of(mean_got) - 1.0) < 1e-5);
}

TEST_CASE("gateway embeddings: a pooling the model states but the engine lacks turns the route off, "
          "unless set explicitly",
          "[gateway][embeddings]") {
  auto d = qwen3_scoring_deployment();
  auto model = load_model(d.model);
  REQUIRE(model.has_value());
  model->pooling = gguf_pooling(4, "qwen3.pooling_type");  // rank: a reranker's
  std::string warning;
  auto m = gateway::try_make_served_model(*model, d, &warning);
  REQUIRE(m.has_value());  // the server still starts: generation and rerank are unaffected
  CHECK_FALSE(m->embeddings.has_value());
  CHECK_THAT(m->embeddings_unavailable, Catch::Contains("\"rank\"") && Catch::Contains("qwen3.pooling_type") &&
                                            Catch::Contains("embeddings.pooling"));
  CHECK_THAT(warning, Catch::Contains("rank"));
  d.embeddings.pooling = pooling_kind::last;  // an explicit setting wins
  m = gateway::try_make_served_model(*model, d, nullptr);
  REQUIRE(m.has_value());
  REQUIRE(m->embeddings.has_value());
  CHECK(m->embedding.pooling == pooling_kind::last);
  model->pooling = gguf_pooling(2, "qwen3.pooling_type");  // cls: the first token
  d.embeddings.pooling.reset();
  m = gateway::try_make_served_model(*model, d, nullptr);
  REQUIRE(m.has_value());
  REQUIRE(m->embeddings.has_value());
  CHECK(m->embedding.pooling == pooling_kind::first);
  CHECK(m->embedding.normalize);
}
