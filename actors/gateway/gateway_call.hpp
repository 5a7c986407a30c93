#pragma once
/// What a connection knows of a call it runs (a completion, a scoring request): the
/// bytes it hands over, and how to stop it when the client goes away.

#include <string>

namespace inflight::gateway {

/// Bytes for the client: SSE events while streaming; the whole body (with `status`)
/// otherwise. `is_last` marks the end of the response.
struct call_output {
  int status = 200;
  std::string bytes;
  bool is_last = false;
};

class gateway_call {
 public:
  virtual ~gateway_call() = default;
  /// The client went away: cancels the engine requests still running (each finishes
  /// within a step).
  virtual void cancel() = 0;
  /// Shutdown gave up on the call (after server.shutdown_grace_s): cancels it; where the
  /// call reports finish reasons, they say "abort", not "cancelled".
  virtual void abort() { cancel(); }
  /// A reader slower than the engine: the session pauses the call while its buffer is
  /// over server.max_stream_buffer_bytes, and resumes it once the buffer drains. A call
  /// that does not stream has nothing to pause.
  virtual void pause() {}
  virtual void resume() {}
  virtual bool is_paused() const { return false; }
};

}  // namespace inflight::gateway
