#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/bench/dataset.hpp"
#include "core/bench/grammar_bench.hpp"
#include "core/bench/structured_workload.hpp"
#include "core/grammar/grammar_cache.hpp"

using namespace inflight;
using namespace inflight::bench;

namespace {

/// Every byte as a token, plus a few JSON-ish multi-byte ones and an EOS.
std::shared_ptr<const grammar_vocab> small_vocab() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, char(b)));
  for (const char* t : {"{\"", "\":", "\": ", "\",", "\", \"", "\"}", "},", "[\"", "\"]", "true", "null", "12", "name",
                        " the", "ORD-", "2024-", "T10:", "cat", "\"\n"})
    tokens.push_back(t);
  tokens.push_back("");  // EOS
  const auto eos = token_id(tokens.size() - 1);
  return std::make_shared<const grammar_vocab>(std::move(tokens), std::vector<token_id>{eos});
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("structured workload: the variance requests, each with a rotating built-in schema", "[core][bench]") {
  const auto& schemas = builtin_schemas();
  REQUIRE(schemas.size() >= 5);
  std::mt19937_64 rng_a(7), rng_b(7);
  workload_options o{"structured", workload_size::small, 128, 20, 32000};
  auto structured = workload_dataset(o, rng_a);
  o.name = "variance";
  auto variance = workload_dataset(o, rng_b);
  REQUIRE(structured.has_value());
  REQUIRE(variance.has_value());
  REQUIRE(structured->size() == 20);
  for (std::size_t i = 0; i < structured->size(); ++i) {
    const auto& p = (*structured)[i];
    CHECK(p.prompt_ids == (*variance)[i].prompt_ids);
    CHECK(p.output_len == (*variance)[i].output_len);
    CHECK(p.json_schema == schemas[i % schemas.size()].text);
    CHECK(p.tag == schemas[i % schemas.size()].name);
  }
  CHECK((*variance)[0].json_schema.empty());
  // The variance caps apply; others are refused.
  o.name = "structured";
  o.cap = 7;
  CHECK_FALSE(workload_dataset(o, rng_a).has_value());
}

TEST_CASE("structured workload: every built-in schema compiles and has the features it is meant to cover",
          "[core][bench]") {
  std::set<std::string> names;
  bool has_ref = false, has_nested = false, has_enum = false, has_array = false;
  for (const auto& s : builtin_schemas()) {
    INFO(s.name);
    CHECK(names.insert(s.name).second);
    auto g = try_compile({grammar_kind::json_schema, s.text});
    REQUIRE(g.has_value());
    const auto j = nlohmann::json::parse(s.text);
    CHECK(j["type"] == "object");
    CHECK(j.contains("required"));
    has_ref |= s.text.find("$ref") != std::string::npos;
    has_enum |= s.text.find("\"enum\"") != std::string::npos;
    has_array |= s.text.find("\"array\"") != std::string::npos;
    for (const auto& [key, prop] : j["properties"].items()) has_nested |= prop.value("type", "") == "object";
  }
  CHECK(has_ref);
  CHECK(has_nested);
  CHECK(has_enum);
  CHECK(has_array);
}

TEST_CASE("structured workload: schema files as an array, an object of schemas, one schema, or JSONL",
          "[core][bench]") {
  auto array = load_schemas(write_temp("inflight_schemas_array.json", R"([{"type":"integer"},{"type":"string"}])").string());
  REQUIRE(array.has_value());
  REQUIRE(array->size() == 2);
  CHECK((*array)[1].name == "schema1");
  CHECK(nlohmann::json::parse((*array)[1].text) == nlohmann::json{{"type", "string"}});

  auto named = load_schemas(write_temp("inflight_schemas_named.json", R"({"a":{"type":"integer"},"b":{"enum":[1]}})").string());
  REQUIRE(named.has_value());
  REQUIRE(named->size() == 2);
  CHECK((*named)[0].name == "a");

  auto single = load_schemas(write_temp("inflight_schemas_one.json", R"({"type":"object","properties":{"x":{"type":"string"}}})").string());
  REQUIRE(single.has_value());
  CHECK(single->size() == 1);

  auto lines = load_schemas(write_temp("inflight_schemas.jsonl", "{\"type\":\"integer\"}\n\n{\"type\":\"boolean\"}\n").string());
  REQUIRE(lines.has_value());
  CHECK(lines->size() == 2);

  CHECK(load_schemas("builtin")->size() == builtin_schemas().size());
  CHECK_FALSE(load_schemas("/nonexistent/schemas.json").has_value());
  CHECK_FALSE(load_schemas(write_temp("inflight_schemas_bad.json", "[1, 2]").string()).has_value());
  CHECK_FALSE(load_schemas(write_temp("inflight_schemas_empty.json", "\n").string()).has_value());
}

TEST_CASE("grammar bench: random walks through every built-in schema end in valid JSON", "[core][bench][grammar]") {
  const auto vocab = small_vocab();
  grammar_bench_options o;
  o.num_compiles = 2;
  o.num_walks = 6;
  o.max_steps = 400;
  o.structural_bias = 0.7;
  std::mt19937_64 rng(3);
  int num_finished = 0;
  for (const auto& s : builtin_schemas()) {
    INFO(s.name);
    auto t = measure_schema(s, vocab, o, rng);
    REQUIRE(t.has_value());
    CHECK(t->compile_s.size() == 2);
    CHECK(t->num_positions > 0);
    CHECK(t->num_walks == 6);
    CHECK(t->mask_s.size() >= std::size_t(t->num_walks));
    CHECK(t->num_valid_json == t->num_finished);  // every complete walk is JSON
    num_finished += t->num_finished;
  }
  CHECK(num_finished > 0);
  auto bad = measure_schema({"bad", R"({"type": "no-such-type"})"}, vocab, o, rng);
  CHECK_FALSE(bad.has_value());
}

TEST_CASE("grammar bench: allowed_tokens lists the mask's bits without EOS", "[core][bench][grammar]") {
  const auto vocab = small_vocab();
  std::vector<std::uint64_t> mask(vocab->num_mask_words(), 0);
  const token_id eos = vocab->eos_ids()[0];
  for (token_id id : {token_id(0), token_id(65), token_id(257), eos}) mask[std::size_t(id) >> 6] |= std::uint64_t{1} << (id & 63);
  CHECK(allowed_tokens(mask, *vocab) == std::vector<token_id>{0, 65, 257});
}
