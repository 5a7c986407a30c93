// Greedy generation of stories260K against the reference C implementation's texts,
// and the same sequences alone, batched, and prefilled in chunks.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include "core/model/formats/llama2c.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/backends/stories260k.hpp"
#include "tests/backends/toy_driver.hpp"
#include "tests/shared_data.hpp"

using namespace inflight;
using inflight::test::shared_file;

namespace {

using stories = test::stories260k;

std::optional<stories> load_stories() { return test::load_stories260k(); }

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The backend on one kernel table (empty: the best this CPU runs).
std::unique_ptr<cpu_backend> make_backend(const stories& m, int num_blocks,
                                          std::optional<kernels::cpu::cpu_isa> isa = std::nullopt) {
  cpu_backend_options options;
  options.isa = isa;
  auto be = cpu_backend::create(m.weights, kv_cache_config{16, num_blocks, 0}, options);
  REQUIRE(be.has_value());
  return std::move(*be);
}

/// Every kernel table this CPU runs: each must reproduce the reference on its own.
std::vector<kernels::cpu::cpu_isa> runnable_isas() {
  std::vector<kernels::cpu::cpu_isa> out;
  for (auto isa : {kernels::cpu::cpu_isa::portable, kernels::cpu::cpu_isa::avx2, kernels::cpu::cpu_isa::avx512,
                   kernels::cpu::cpu_isa::avx512_vnni}) {
    if (kernels::cpu::can_run(isa)) out.push_back(isa);
  }
  return out;
}

/// What run.c prints for a piece: nothing for a lone unprintable, non-space byte.
std::string printable(const std::string& piece) {
  if (piece.size() == 1) {
    const auto c = static_cast<unsigned char>(piece[0]);
    if (!(std::isprint(c) || std::isspace(c))) return "";
  }
  return piece;
}

/// run.c's loop: positions 0..steps-1 one token at a time, prompt tokens forced,
/// arg-max after, stop at BOS; prints every chosen token, then a newline.
std::string run_reference_loop(const stories& m, const std::string& prompt, int steps, kernels::cpu::cpu_isa isa) {
  auto be = make_backend(m, 64, isa);
  const auto prompt_ids = m.tok->encode(prompt, true);
  auto seq = test::make_toy_seq({prompt_ids[0]}, 0, 0, 64);
  std::string out;
  token_id token = prompt_ids[0];
  for (int pos = 0; pos < steps; ++pos) {
    step_plan plan;
    seq_step st;
    st.tokens = {token};
    st.start_position = pos;
    st.block_table = seq.blocks;
    st.do_sample = true;
    st.params = test::greedy();
    plan.seqs.push_back(st);
    auto r = be->execute(plan);
    REQUIRE(r.has_value());
    const token_id next = pos + 1 < int(prompt_ids.size()) ? prompt_ids[pos + 1] : r->tokens[0].token;
    if (next == 1) break;
    out += printable(m.tok->token_bytes(token, next));
    token = next;
  }
  return out + "\n";
}

}  // namespace

TEST_CASE("stories260K greedy text equals the reference: 'Once upon a time', 64 steps", "[backend][reference]") {
  auto m = load_stories();
  if (!m) return;
  const auto expected = read_text(shared_file("models/stories260K/reference/once_upon_a_time.n64.txt"));
  for (auto isa : runnable_isas()) {
    INFO(kernels::cpu::to_string(isa) << " kernels");
    CHECK(run_reference_loop(*m, "Once upon a time", 64, isa) == expected);
  }
}

TEST_CASE("stories260K greedy text equals the reference: no prompt, 256 steps", "[backend][reference]") {
  auto m = load_stories();
  if (!m) return;
  const auto expected = read_text(shared_file("models/stories260K/reference/no_prompt.n256.txt"));
  for (auto isa : runnable_isas()) {
    INFO(kernels::cpu::to_string(isa) << " kernels");
    CHECK(run_reference_loop(*m, "", 256, isa) == expected);
  }
}

namespace {

const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Ben went to the park",
                                          "", "A big red ball", "One day, a little bird"};

std::vector<test::toy_seq> make_seqs(const stories& m, int max_new) {
  std::vector<test::toy_seq> seqs;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    seqs.push_back(test::make_toy_seq(m.tok->encode(prompts[i], true), max_new, int(i) * 8, 8));
  }
  return seqs;
}

}  // namespace

TEST_CASE("sequences alone and together in one ragged batch give identical greedy tokens", "[backend][ragged]") {
  auto m = load_stories();
  if (!m) return;
  constexpr int max_new = 40;
  auto alone = make_seqs(*m, max_new);
  for (auto& s : alone) {
    auto be = make_backend(*m, 64);
    std::vector<test::toy_seq> one{s};
    test::run_toy(*be, one, [](int, int) { return 1 << 20; });
    s = one[0];
  }
  SECTION("all at once, whole prompts") {
    auto together = make_seqs(*m, max_new);
    auto be = make_backend(*m, 64);
    test::run_toy(*be, together, [](int, int) { return 1 << 20; });
    for (std::size_t i = 0; i < alone.size(); ++i) CHECK(together[i].tokens == alone[i].tokens);
  }
  SECTION("staggered arrivals and random chunks: prefill and decode mixed in every step") {
    auto together = make_seqs(*m, max_new);
    auto be = make_backend(*m, 64);
    std::mt19937 rng(7);
    test::run_toy(*be, together, [&](int i, int step) { return step < i * 5 ? 0 : int(rng() % 6) + 1; });
    for (std::size_t i = 0; i < alone.size(); ++i) CHECK(together[i].tokens == alone[i].tokens);
  }
}

TEST_CASE("prefill in chunks of 1, 3, 7 or whole gives the same logits, bit for bit", "[backend][chunked]") {
  auto m = load_stories();
  if (!m) return;
  const auto prompt = m->tok->encode("Once upon a time, there was a little girl named Lily who loved", true);
  REQUIRE(prompt.size() > 14);
  // Logits at every position from a 1-token-per-step run are the baseline.
  auto logits_at_chunk_ends = [&](int chunk) {
    auto be = make_backend(*m, 16);
    std::vector<std::pair<int, std::vector<float>>> out;
    for (int start = 0; start < int(prompt.size()); start += chunk) {
      const int n = std::min<int>(chunk, int(prompt.size()) - start);
      step_plan plan;
      seq_step st;
      st.tokens.assign(prompt.begin() + start, prompt.begin() + start + n);
      st.start_position = start;
      st.block_table = {0, 1, 2, 3};
      st.do_sample = true;
      plan.seqs.push_back(st);
      auto logits = be->forward(plan);
      REQUIRE(logits.has_value());
      out.emplace_back(start + n - 1, std::vector<float>(logits->begin(), logits->end()));
    }
    return out;
  };
  const auto base = logits_at_chunk_ends(1);
  for (int chunk : {3, 7, int(prompt.size())}) {
    for (const auto& [pos, logits] : logits_at_chunk_ends(chunk)) {
      const auto& ref = base.at(pos).second;
      REQUIRE(logits.size() == ref.size());
      // Every kernel computes a token's values with the same operations whatever else is
      // in its step (kernels/cpu/cpu_isa.hpp), so chunking changes no bit.
      INFO("chunk " << chunk << " position " << pos);
      CHECK(std::memcmp(logits.data(), ref.data(), ref.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("a step plan that breaks the backend's bounds is an error, not a crash", "[backend]") {
  auto m = load_stories();
  if (!m) return;
  auto be = make_backend(*m, 4);
  step_plan plan;
  seq_step st;
  st.tokens = {1, 2, 3};
  st.block_table = {9};  // no such block
  plan.seqs.push_back(st);
  CHECK_FALSE(be->execute(plan).has_value());
  plan.seqs[0].block_table = {0};
  plan.seqs[0].tokens = {1, 100000};  // outside the vocabulary
  CHECK_FALSE(be->execute(plan).has_value());
  plan.seqs[0].tokens.assign(17, 1);  // more tokens than one block holds
  CHECK_FALSE(be->execute(plan).has_value());
}
