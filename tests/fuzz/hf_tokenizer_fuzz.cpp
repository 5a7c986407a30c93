// libFuzzer harness: Hugging Face tokenizer files. The input is tokenizer.json, then
// optionally a NUL byte and tokenizer_config.json, then a NUL byte and
// generation_config.json. A tokenizer that loads must encode and decode text (a fixed
// sample and the input's own first bytes) with every id inside its vocabulary.
#include "core/model/tokenizer/hf_tokenizer.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

void check_round(const hf_tokenizer& tok, std::string_view text) {
  const auto ids = tok.encode(text, encode_options{true, true});
  for (token_id id : ids) FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
  const auto decoded = tok.decode(ids);
  FUZZ_CHECK(is_valid_utf8(decoded));
  incremental_decoder dec(tok);
  std::string streamed;
  for (token_id id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  (void)tok.encode(text, encode_options{false, false});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = fuzz::as_text(data, size);
  const auto [tokenizer_json, rest] = fuzz::split_once(input, std::string_view("\0", 1));
  const auto [config_json, generation_json] = fuzz::split_once(rest, std::string_view("\0", 1));
  hf_tokenizer_sources sources{std::string(tokenizer_json), std::string(config_json), std::string(generation_json)};
  auto tok = hf_tokenizer::try_from_json(sources);
  if (!tok) {
    fuzz::note(tok.error().message);
    FUZZ_CHECK(!tok.error().message.empty());
    return 0;
  }
  const auto& t = **tok;
  FUZZ_CHECK(t.vocab_size() >= 0);
  if (auto bos = t.bos_id()) FUZZ_CHECK(*bos >= 0 && *bos < t.vocab_size());
  for (token_id id : t.eos_ids()) FUZZ_CHECK(id >= 0 && id < t.vocab_size());
  check_round(t, "Hello, world! It's 2024: caf\xC3\xA9 \xE2\x96\x81 <s>  \n\t x");
  check_round(t, input.substr(0, 64));
  for (token_id id = -1; id <= t.vocab_size() && id < 512; ++id) {
    (void)t.piece(id);
    (void)t.token_bytes(-1, id);
  }
  return 0;
}
