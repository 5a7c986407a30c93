#include "actors/cluster/wire.hpp"

namespace inflight {

void announce_wire_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<wire_request>("inflight::wire_request");
  cfg.add_message_type<token_event>("inflight::token_event");
  cfg.add_message_type<finish_event>("inflight::finish_event");
  cfg.add_message_type<engine_health>("inflight::engine_health");
  cfg.add_message_type<error>("inflight::error");
  cfg.add_message_type<wire_submit_reply>("inflight::wire_submit_reply");
  cfg.add_message_type<engine_report>("inflight::engine_report");
  cfg.add_message_type<step_summary>("inflight::step_summary");
}

}  // namespace inflight
