// A thinking model's reasoning split from its answer (core/api/reasoning): whole outputs,
// prompts that open the block, and streaming that gives the same split whatever the cut
// points of the text.
#include <catch2/catch.hpp>

#include <random>

#include "core/api/reasoning.hpp"

using namespace inflight;

namespace {

const reasoning_markers think;

/// The split of `text` pushed in pieces cut at random points.
reasoning_delta split_in_pieces(std::string_view text, bool is_open, std::uint32_t seed) {
  std::mt19937 rng(seed);
  reasoning_splitter splitter(think, is_open);
  reasoning_delta all;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t n = std::min<std::size_t>(text.size() - at, 1 + rng() % 5);
    const reasoning_delta d = splitter.push(text.substr(at, n));
    all.reasoning += d.reasoning;
    all.content += d.content;
    at += n;
  }
  const reasoning_delta rest = splitter.finish();
  all.reasoning += rest.reasoning;
  all.content += rest.content;
  return all;
}

}  // namespace

TEST_CASE("reasoning: a think block before the answer is split off", "[reasoning]") {
  const auto d = split_reasoning(think, false, "<think>\nLet me add: 2+2=4.\n</think>\n\nThe answer is 4.");
  CHECK(d.reasoning == "\nLet me add: 2+2=4.\n");
  CHECK(d.content == "The answer is 4.");
}

TEST_CASE("reasoning: output without a think block is all answer", "[reasoning]") {
  const auto d = split_reasoning(think, false, "  Just the answer <think> in the middle </think> stays.");
  CHECK(d.reasoning.empty());
  CHECK(d.content == "  Just the answer <think> in the middle </think> stays.");
}

TEST_CASE("reasoning: a prompt that opened the block leaves only its end to generate", "[reasoning]") {
  CHECK(prompt_opens_reasoning(think, "<|Assistant|><think>\n"));
  CHECK_FALSE(prompt_opens_reasoning(think, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK_FALSE(prompt_opens_reasoning(think, "<|im_start|>assistant\n"));
  const auto d = split_reasoning(think, true, "First, 3*3 is 9.</think>Nine.");
  CHECK(d.reasoning == "First, 3*3 is 9.");
  CHECK(d.content == "Nine.");
}

TEST_CASE("reasoning: reasoning that never closes stays reasoning", "[reasoning]") {
  const auto d = split_reasoning(think, false, "<think>I ran out of tokens while thin");
  CHECK(d.reasoning == "I ran out of tokens while thin");
  CHECK(d.content.empty());
  const auto open = split_reasoning(think, true, "half an end marker </thi");
  CHECK(open.reasoning == "half an end marker </thi");
}

TEST_CASE("reasoning: a begin marker never completed is content", "[reasoning]") {
  CHECK(split_reasoning(think, false, "\n<thi").content == "\n<thi");
  CHECK(split_reasoning(think, false, "<thinking>").content == "<thinking>");
}

TEST_CASE("reasoning: streaming holds back only what may be a marker", "[reasoning]") {
  reasoning_splitter s(think, false);
  CHECK(s.push("<thi").empty());
  CHECK(s.push("nk>plan").reasoning == "plan");
  CHECK(s.is_reasoning());
  const auto a = s.push(" more </th");
  CHECK(a.reasoning == " more ");
  const auto b = s.push("ink>\n");
  CHECK(b.empty());
  CHECK_FALSE(s.is_reasoning());
  CHECK(s.push("\nAnswer").content == "Answer");
  CHECK(s.finish().empty());
}

TEST_CASE("reasoning: any cut of the text splits the same way", "[reasoning]") {
  const std::string texts[] = {
      "<think>\nstep 1 </ not yet </think> still? no.\n</think>\n\nThe <think> answer.",
      "\n\n<think></think>answer only",
      "plain answer with </think> inside",
      "<think>never closed </thin",
  };
  for (const auto& text : texts) {
    for (bool is_open : {false, true}) {
      const auto whole = split_reasoning(think, is_open, text);
      for (std::uint32_t seed = 0; seed < 50; ++seed) {
        const auto pieces = split_in_pieces(text, is_open, seed);
        INFO(text << " open=" << is_open << " seed=" << seed);
        CHECK(pieces.reasoning == whole.reasoning);
        CHECK(pieces.content == whole.content);
      }
    }
  }
  CHECK(split_reasoning(think, false, texts[0]).reasoning == "\nstep 1 </ not yet ");
  CHECK(split_reasoning(think, false, texts[0]).content == "still? no.\n</think>\n\nThe <think> answer.");
}

TEST_CASE("reasoning: parsers by name, auto from the template", "[reasoning]") {
  CHECK(try_reasoning_markers("none", "{{ '</think>' }}").value() == std::nullopt);
  CHECK(try_reasoning_markers("auto", "{{ '<think>' }} x {{ '</think>' }}").value() == think);
  CHECK(try_reasoning_markers("auto", "{{ messages }}").value() == std::nullopt);
  CHECK(try_reasoning_markers("deepseek_r1", "").value() == think);
  CHECK(try_reasoning_markers("qwen3", "").value() == think);
  CHECK_FALSE(try_reasoning_markers("harmony-ish", "").has_value());
}
