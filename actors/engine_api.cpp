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

}  // namespace inflight
