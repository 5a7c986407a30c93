#pragma once
/// A request_sink that never runs connection code on an engine thread: each event is
/// copied and posted to the connection's own serial executor (its strand), where the
/// handlers run. Posting never blocks, so a slow client never stalls the engine.

#include <functional>
#include <memory>

#include "actors/engine_api.hpp"

namespace inflight::gateway {

/// Runs a task later on the connection's strand.
using post_fn = std::function<void(std::function<void()>)>;

class posting_sink final : public request_sink, public std::enable_shared_from_this<posting_sink> {
 public:
  using token_handler = std::function<void(const token_event&)>;
  using finish_handler = std::function<void(const finish_event&)>;

  posting_sink(post_fn post, token_handler on_token, finish_handler on_finish)
      : post_(std::move(post)), on_token_(std::move(on_token)), on_finish_(std::move(on_finish)) {}

  void on_token(const token_event& event) override {
    post_([self = shared_from_this(), event] { self->on_token_(event); });
  }
  void on_finish(const finish_event& event) override {
    // The handlers may hold their session alive: drop them once the last event ran.
    post_([self = shared_from_this(), event] {
      self->on_finish_(event);
      self->on_token_ = nullptr;
      self->on_finish_ = nullptr;
    });
  }

 private:
  post_fn post_;
  token_handler on_token_;
  finish_handler on_finish_;
};

}  // namespace inflight::gateway
