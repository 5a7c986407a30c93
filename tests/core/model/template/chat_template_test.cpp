#include <catch2/catch.hpp>

#include "core/model/template/chat_template.hpp"

using inflight::chat_family;
using inflight::chat_message;
using inflight::chat_template;

namespace {

const std::vector<chat_message> system_user{{"system", "Be brief."}, {"user", " Hi \n"}};
const std::vector<chat_message> multi_turn{{"user", "a"}, {"assistant", "b"}, {"user", "c"}};

std::string render(std::string_view name, const std::vector<chat_message>& messages, bool add_prompt,
                   std::string_view bos = "<s>", std::string_view eos = "</s>") {
  auto t = chat_template::try_from_name(name);
  REQUIRE(t);
  auto text = t->try_render(messages, add_prompt, bos, eos);
  if (!text) FAIL(text.error().message);
  return *text;
}

}  // namespace

TEST_CASE("chat templates are recognised by their markers", "[core][tokenizer][chat]") {
  auto family_of = [](std::string_view source) {
    auto t = chat_template::try_detect(source);
    REQUIRE(t);
    return t->family();
  };
  CHECK(family_of("{{ '<|start_header_id|>' + message['role'] }}{% if add_generation_prompt %}") == chat_family::llama_3);
  CHECK(family_of("{{ bos_token + '[INST] ' }}<<SYS>>") == chat_family::llama_2);
  CHECK(family_of("{{ bos_token }}{{ '[INST] ' + message['content'] }}") == chat_family::mistral);
  CHECK(family_of("{{'<|im_start|>' + message['role'] }}") == chat_family::chatml);
  CHECK(family_of("<|im_start|>{% if '</think>' in content %}<think>") == chat_family::qwen3);
  CHECK(family_of("{{ '<|user|>\n' }}{{ '<|assistant|>' }}") == chat_family::zephyr);
  auto unknown = chat_template::try_detect("{{ messages | custom }}");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("model.chat_template = \"llama-2\" | \"llama-3\"") != std::string::npos);
  CHECK_FALSE(chat_template::try_detect(""));
  CHECK_FALSE(chat_template::try_from_name("vicuna"));
}

TEST_CASE("Llama-3 renders headers, trims content, BOS once", "[core][tokenizer][chat]") {
  CHECK(render("llama-3", system_user, true, "<|begin_of_text|>") ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render("llama-3", {{"user", "x"}}, false, "B") == "B<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
  // The base model's template has no add_generation_prompt switch: the header is always added.
  auto base = chat_template::try_detect("{{ '<|start_header_id|>' }}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}");
  REQUIRE(base);
  CHECK(base->try_render(std::vector<chat_message>{{"user", "x"}}, false, "B", "E").value() ==
        "B<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("Llama-2 folds the system prompt into the first turn", "[core][tokenizer][chat]") {
  CHECK(render("llama-2", system_user, true) == "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST]");
  CHECK(render("llama-2", multi_turn, false) == "<s>[INST] a [/INST] b </s><s>[INST] c [/INST]");
  auto t = chat_template::try_from_name("llama-2");
  auto bad = t->try_render(std::vector<chat_message>{{"user", "a"}, {"user", "b"}}, true, "<s>", "</s>");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == inflight::errc::invalid_argument);
}

TEST_CASE("Mistral alternates turns and has no system role", "[core][tokenizer][chat]") {
  CHECK(render("mistral", multi_turn, true) == "<s>[INST] a [/INST]b</s>[INST] c [/INST]");
  auto t = chat_template::try_from_name("mistral");
  CHECK_FALSE(t->try_render(system_user, true, "<s>", "</s>"));
}

TEST_CASE("ChatML and Zephyr", "[core][tokenizer][chat]") {
  CHECK(render("chatml", system_user, true) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi \n<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render("chatml", multi_turn, false) ==
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n<|im_start|>user\nc<|im_end|>\n");
  auto qwen2 = chat_template::try_detect(
      "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
      "{% endif %}{{'<|im_start|>' + message['role'] }}");
  REQUIRE(qwen2);
  CHECK(qwen2->default_system() == "You are a helpful assistant.");
  CHECK(qwen2->try_render(std::vector<chat_message>{{"user", "x"}}, false, "", "").value() ==
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nx<|im_end|>\n");
  CHECK(render("zephyr", system_user, true) == "<|system|>\nBe brief.</s>\n<|user|>\n Hi \n</s>\n<|assistant|>\n");
}

TEST_CASE("Qwen3 keeps thinking only after the last user query", "[core][tokenizer][chat]") {
  const std::vector<chat_message> chat{{"user", "q1"},
                                       {"assistant", "<think>\nold\n</think>\n\nA1"},
                                       {"user", "q2"},
                                       {"assistant", "<think>\nnew thoughts\n</think>\n\nA2"}};
  CHECK(render("qwen3", chat, false, "", "") ==
        "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nnew thoughts\n</think>\n\nA2<|im_end|>\n");
  CHECK(render("qwen3", {{"user", "q"}, {"assistant", "plain"}}, false, "", "") ==
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nplain<|im_end|>\n");
  CHECK(render("qwen3", {{"system", "S"}, {"user", "q"}}, true, "", "") ==
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("trim_white_space strips Unicode white space at both ends only", "[core][tokenizer][chat]") {
  CHECK(inflight::trim_white_space(" \t\xE3\x80\x80 a b \n") == "a b");
  CHECK(inflight::trim_white_space("   ").empty());
  CHECK(inflight::trim_white_space("x") == "x");
}
