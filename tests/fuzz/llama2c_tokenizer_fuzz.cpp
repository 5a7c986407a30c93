// libFuzzer harness: llama2.c tokenizer.bin contents, read to the end of the input and
// with the vocabulary size a model header would give (the first two input bytes). A
// tokenizer that loads must encode any text into ids of its vocabulary and decode them.
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

void check_tokenizer(const llama2c_tokenizer& tok, std::string_view sample) {
  for (std::string_view text : {std::string_view("Once upon a time, \xE2\x96\x81 caf\xC3\xA9 \xF0\x9F\x98\x80!"), sample}) {
    const auto ids = tok.encode(text, true);
    for (token_id id : ids) FUZZ_CHECK(id >= 0 && id < tok.vocab_size());
    incremental_decoder dec(tok);
    for (token_id id : ids) (void)dec.push(id);
    (void)dec.flush();
  }
  for (token_id id = -1; id <= tok.vocab_size() && id < 300; ++id) {
    (void)tok.piece(id);
    (void)tok.token_bytes(llama2c_tokenizer::bos_token, id);
    (void)tok.score(id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int vocab_size = data[0] | (data[1] << 8);
  const auto bytes = fuzz::as_text(data + 2, size - 2);
  const auto sample = bytes.substr(bytes.size() > 32 ? bytes.size() - 32 : 0);
  if (auto tok = llama2c_tokenizer::parse(bytes, std::nullopt)) {
    check_tokenizer(**tok, sample);
  } else {
    fuzz::note(tok.error().message);
  }
  if (auto tok = llama2c_tokenizer::parse(bytes, vocab_size)) {
    FUZZ_CHECK((*tok)->vocab_size() == vocab_size);
    check_tokenizer(**tok, sample);
  } else {
    fuzz::note(tok.error().message);
  }
  return 0;
}
