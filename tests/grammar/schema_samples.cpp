// Outputs of a random model under JSON Schemas, for a validator nobody here wrote (ajv,
// tests/grammar/check-samples.mjs) to check. Each schema of schemas.json is compiled as a
// request's schema is (try_compile, json_schema) and walked over a real vocabulary: at
// every step a random token among those the mask allows, favouring tokens that contain
// a JSON delimiter now and then so that strings and arrays end. Refused schemas are
// compiled too and their errors written out, for the checker to hold them to naming the
// keyword and its path.
//
//   inflight_schema_samples SCHEMAS_JSON LLAMA2C_TOKENIZER OUT_JSONL [WALKS] [MAX_STEPS]
//
// Output lines: {"kind": "sample", "name", "complete": bool, "steps", "text"} and
// {"kind": "refused", "name", "compiled": bool, "message"}.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/grammar/grammar_cache.hpp"
#include "core/grammar/matcher.hpp"
#include "core/grammar/tokenizer_vocab.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"

using namespace inflight;
using json = nlohmann::json;

namespace {

struct walk_result {
  std::string text;
  int steps = 0;
  bool is_complete = false;
};

bool has_delimiter(const std::string& bytes) { return bytes.find_first_of("\"]},@.") != std::string::npos; }

walk_result random_walk(const std::shared_ptr<const token_index>& index, std::mt19937_64& rng, int max_steps) {
  grammar_matcher m(index);
  const auto& vocab = index->vocab();
  walk_result out;
  std::vector<token_id> allowed, delimiters;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (; out.steps < max_steps; ++out.steps) {
    const auto mask = m.next_token_mask();
    allowed.clear();
    delimiters.clear();
    bool can_end = false;
    for (token_id id = 0; id < vocab.size(); ++id) {
      if (!mask_has(mask, id)) continue;
      if (vocab.is_eos(id)) {
        can_end = true;
        continue;
      }
      allowed.push_back(id);
      if (has_delimiter(vocab.bytes(id))) delimiters.push_back(id);
    }
    if (can_end && (allowed.empty() || coin(rng) < 0.5)) {
      out.is_complete = true;
      return out;
    }
    if (allowed.empty()) return out;  // a dead end: the checker counts it as a failure
    const auto& pool = !delimiters.empty() && coin(rng) < 0.3 ? delimiters : allowed;
    const token_id pick = pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)];
    if (!m.try_accept_token(pick)) return out;  // the mask allowed what the matcher refuses
    out.text += vocab.bytes(pick);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: inflight_schema_samples SCHEMAS_JSON LLAMA2C_TOKENIZER OUT_JSONL [WALKS] [MAX_STEPS]\n";
    return 2;
  }
  const int walks = argc > 4 ? std::stoi(argv[4]) : 12;
  const int max_steps = argc > 5 ? std::stoi(argv[5]) : 600;
  std::ifstream in(argv[1]);
  const auto corpus = json::parse(in);
  auto tok = llama2c_tokenizer::load(argv[2]);
  if (!tok) {
    std::cerr << "schema_samples: " << tok.error().message << "\n";
    return 1;
  }
  const auto vocab = make_grammar_vocab(**tok);
  std::ofstream out(argv[3]);
  std::mt19937_64 rng(20261126);
  int num_samples = 0;
  for (const auto& entry : corpus.at("accepted")) {
    const auto name = entry.at("name").get<std::string>();
    auto compiled = try_compile({grammar_kind::json_schema, entry.at("schema").dump()});
    if (!compiled) {
      std::cerr << "schema_samples: " << name << " was refused: " << compiled.error().message << "\n";
      return 1;
    }
    auto index = std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*compiled)), vocab);
    for (int w = 0; w < walks; ++w) {
      const auto r = random_walk(index, rng, max_steps);
      json line = {{"kind", "sample"}, {"name", name}, {"complete", r.is_complete}, {"steps", r.steps}};
      try {
        line["text"] = r.text;
        out << line.dump() << "\n";
      } catch (const json::exception&) {  // not UTF-8: written as bytes for the checker to report
        line["text"] = nullptr;
        line["invalid_utf8"] = true;
        out << line.dump() << "\n";
      }
      ++num_samples;
    }
  }
  for (const auto& entry : corpus.at("refused")) {
    auto compiled = try_compile({grammar_kind::json_schema, entry.at("schema").dump()});
    json line = {{"kind", "refused"}, {"name", entry.at("name")}, {"compiled", compiled.has_value()},
                 {"message", compiled ? std::string() : compiled.error().message}};
    out << line.dump() << "\n";
  }
  std::printf("schema_samples: %d samples of %zu schemas, %zu refusals tried\n", num_samples,
              corpus.at("accepted").size(), corpus.at("refused").size());
  return 0;
}
