#include "actors/model_control.hpp"

namespace inflight {

const char* to_string(model_state state) {
  switch (state) {
    case model_state::loaded: return "loaded";
    case model_state::loading: return "loading";
    case model_state::unloaded: return "unloaded";
    case model_state::failed: return "failed";
  }
  return "unknown";
}

}  // namespace inflight
