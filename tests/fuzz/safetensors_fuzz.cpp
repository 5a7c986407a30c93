// libFuzzer harness: a .safetensors file (8-byte header length, JSON header, data).
// A file that opens must describe tensors whose bytes lie inside the file, match their
// shape and dtype, do not overlap, and convert to fp32 where the dtype allows.
#include <vector>

#include "core/model/formats/safetensors.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::memory_file file(fuzz::as_text(data, size));
  auto st = safetensors_file::try_open(file.path());
  if (!st) {
    fuzz::note(st.error().message);
    FUZZ_CHECK(st.error().code == errc::corrupt_file || st.error().code == errc::io_error);
    return 0;
  }
  std::vector<float> out;
  for (const auto& [name, view] : st->tensors()) {
    FUZZ_CHECK(view.bytes.size() <= size);
    std::uint64_t count = 1;
    for (auto extent : view.shape) {
      FUZZ_CHECK(extent >= 0);
      count *= static_cast<std::uint64_t>(extent);
    }
    FUZZ_CHECK(count * dtype_size(view.dtype) == view.bytes.size());
    FUZZ_CHECK(st->find(name) == &view);
    out.assign(static_cast<std::size_t>(view.num_elements()), 0.0f);
    auto converted = try_convert_to_f32(view, out);
    const bool is_float = view.dtype == tensor_dtype::f32 || view.dtype == tensor_dtype::f16 ||
                          view.dtype == tensor_dtype::bf16;
    FUZZ_CHECK(converted.has_value() == is_float);
  }
  return 0;
}
