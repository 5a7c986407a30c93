// libFuzzer harness: llama2.c checkpoints (7 x int32 header, then fp32 weights). A file
// that loads must hold exactly the weights its header describes.
#include "core/model/formats/llama2c.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::memory_file file(fuzz::as_text(data, size));
  auto w = load_llama2c(file.path());
  if (!w) {
    fuzz::note(w.error().message);
    FUZZ_CHECK(!w.error().message.empty());
    return 0;
  }
  const auto& c = w->config;
  FUZZ_CHECK(llama2c_file_size(c) == static_cast<std::int64_t>(size));
  FUZZ_CHECK(static_cast<int>(w->layers.size()) == c.num_layers);
  FUZZ_CHECK(w->token_embedding.rows() == c.vocab_size && w->token_embedding.cols() == c.dim);
  FUZZ_CHECK(w->final_norm.size() == static_cast<std::size_t>(c.dim));
  FUZZ_CHECK(c.num_heads * c.head_dim == c.dim);
  return 0;
}
