// libFuzzer harness: deployment TOML and `--set key=value` overrides. The input is a
// TOML document; each of its lines is also applied as an override to the defaults. A
// deployment that parses must keep the loader's own consistency rules; an override
// must be applied or refused with a message.
#include "config/deployment_loader.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using namespace inflight;

namespace {

void check_deployment(const deployment& d) {
  FUZZ_CHECK(d.model.dummy.num_kv_heads > 0);
  FUZZ_CHECK(d.model.dummy.num_heads % d.model.dummy.num_kv_heads == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fuzz::as_text(data, size));
  if (auto d = config::parse_deployment(text, "fuzz.toml")) {
    check_deployment(*d);
  } else {
    fuzz::note(d.error().message);
    FUZZ_CHECK(!d.error().message.empty());
  }
  deployment d;
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto [line, next] = fuzz::split_once(rest, "\n");
    if (auto ok = config::apply_override(d, std::string(line)); !ok) FUZZ_CHECK(!ok.error().message.empty());
    rest = next;
  }
  return 0;
}
