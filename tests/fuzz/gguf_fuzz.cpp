// libFuzzer harness: a GGUF file. A file that parses must have every tensor inside its
// data section, aligned, of the size its type and shape imply, each viewable as a
// matrix; every metadata value must read back within the file. Then the model loader's
// steps run on it (vocabulary, config, weights, tokenizer), and a tokenizer that builds
// must only produce ids of its vocabulary.
#include <vector>

#include "core/model/formats/gguf_model.hpp"
#include "core/model/gguf/gguf.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

void touch_value(const gguf_value& v, const std::byte* begin, const std::byte* end, int depth) {
  FUZZ_CHECK(depth <= gguf_limits::max_array_depth);
  if (auto text = v.as_string()) {
    FUZZ_CHECK(text->empty() || (reinterpret_cast<const std::byte*>(text->data()) >= begin &&
                                 reinterpret_cast<const std::byte*>(text->data() + text->size()) <= end));
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    (void)v.int_at(i);
    (void)v.float_at(i);
    (void)v.string_at(i);
    if (v.element_type() == gguf_type::array) touch_value(v.array_at(i), begin, end, depth + 1);
  }
}

void check_tensors(const gguf_file& file, std::size_t size) {
  for (const auto& t : file.tensors()) {
    FUZZ_CHECK(t.ne.size() >= 1 && t.ne.size() <= std::size_t(gguf_limits::max_dims));
    FUZZ_CHECK(t.offset % file.alignment() == 0);
    FUZZ_CHECK(file.data_offset() + t.offset + t.bytes.size() <= size);
    FUZZ_CHECK(file.find_tensor(t.name) != nullptr);
    if (t.rows() == 0 || t.cols() == 0) continue;
    FUZZ_CHECK(std::int64_t(t.bytes.size()) == t.rows() * row_bytes(t.dtype, t.cols()));
    auto matrix = file.try_matrix(t);
    FUZZ_CHECK(matrix.has_value());
    FUZZ_CHECK(matrix->bytes().data() == t.bytes.data());
  }
}

void run_loader(const gguf_file& file) {
  auto vocab = try_read_gguf_vocab(file);
  if (!vocab) return fuzz::note(vocab.error().message);
  auto config = try_read_gguf_config(file, vocab->num_tokens());
  if (config) {
    auto weights = try_load_gguf_weights(file, *config);
    if (!weights) fuzz::note(weights.error().message);
  }
  auto tok = try_make_gguf_tokenizer(*vocab);
  if (!tok) return fuzz::note(tok.error().message);
  for (const char* text : {"Hello world 123", "<s>a</s> \xE2\x96\x81 b\xFF", ""}) {
    token_id prev = -1;
    for (token_id id : (*tok)->encode(text, true)) {
      FUZZ_CHECK(id >= 0 && id < (*tok)->vocab_size());
      (void)(*tok)->token_bytes(prev, id);
      prev = id;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto file = gguf_file::try_parse(bytes, nullptr, "fuzz.gguf");
  if (!file) {
    fuzz::note(file.error().message);
    FUZZ_CHECK(file.error().code == errc::corrupt_file || file.error().code == errc::unsupported);
    return 0;
  }
  for (const auto& [key, value] : file->metadata()) {
    FUZZ_CHECK(file->find(key) != nullptr);
    touch_value(value, bytes.data(), bytes.data() + size, 0);
  }
  check_tensors(*file, size);
  run_loader(*file);
  return 0;
}
