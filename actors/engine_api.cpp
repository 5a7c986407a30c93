#include "actors/engine_api.hpp"

#include <chrono>

namespace inflight {

double engine_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

result<std::vector<request_id>> engine_api::submit_all(std::vector<submission> requests) {
  std::vector<request_id> ids;
  for (auto& s : requests) {
    auto id = submit(std::move(s.request), std::move(s.sink));
    if (!id) {
      for (auto queued : ids) cancel(queued);
      return std::unexpected(id.error());
    }
    ids.push_back(*id);
  }
  return ids;
}

std::vector<lora_adapter_info> engine_api::lora_adapters() const {
  std::vector<lora_adapter_info> out;
  for (const auto& [name, path] : settings().lora.adapters) out.push_back({name, path, true, 0});
  return out;
}

result<void> engine_api::load_lora_adapter(const std::string&, const std::string&) {
  return make_error(errc::unsupported, "this server cannot load LoRA adapters at run time (a router: load them on its engines)");
}

result<void> engine_api::unload_lora_adapter(const std::string&) {
  return make_error(errc::unsupported, "this server cannot unload LoRA adapters at run time (a router: unload them on its engines)");
}

}  // namespace inflight
