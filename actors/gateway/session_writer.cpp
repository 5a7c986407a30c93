#include "actors/gateway/session_writer.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace inflight::gateway {

void session_writer::start(std::weak_ptr<void> owner, handlers h) {
  owner_ = std::move(owner);
  handlers_ = std::move(h);
}

bool session_writer::is_over_limits() const {
  return num_buffered_bytes_ >= limits_.max_buffered_bytes || queue_.size() >= limits_.max_queued_frames;
}

void session_writer::push(std::string frame) {
  if (is_closed_) return;
  num_buffered_bytes_ += frame.size();
  queue_.push_back(std::move(frame));
  if (!is_paused_ && is_over_limits()) {
    is_paused_ = true;
    if (handlers_.on_pause) handlers_.on_pause();
  }
  do_write();
}

void session_writer::do_write() {
  if (is_writing_ || is_closed_ || queue_.empty()) return;
  if (limits_.is_coalescing) {
    writing_.clear();
    for (auto& f : queue_) writing_ += f;
    queue_.clear();
  } else {
    writing_ = std::move(queue_.front());
    queue_.pop_front();
  }
  num_buffered_bytes_ -= std::min(num_buffered_bytes_, writing_.size());
  is_writing_ = true;
  arm_stall_timer();
  handlers_.write(writing_, [this, hold = owner_.lock()](error_code ec) { on_written(ec); });
  // The queue has room again: what paused producers held joins it.
  if (is_paused_ && !is_over_limits()) {
    is_paused_ = false;
    if (handlers_.on_resume) handlers_.on_resume();
  }
}

void session_writer::on_written(error_code ec) {
  is_writing_ = false;
  stall_timer_.cancel();
  writing_.clear();
  if (is_closed_) return;
  if (ec) return gone();
  if (!queue_.empty()) return do_write();
  if (handlers_.on_drained) handlers_.on_drained();
}

void session_writer::arm_stall_timer() {
  if (limits_.stall_timeout_s <= 0) return;
  const auto ms = static_cast<std::int64_t>(std::max(0.001, limits_.stall_timeout_s) * 1e3);
  stall_timer_.expires_after(std::chrono::milliseconds(ms));
  stall_timer_.async_wait([this, hold = owner_.lock()](error_code ec) {
    if (!ec && is_writing_ && !is_closed_) gone();  // the client stopped reading
  });
}

void session_writer::gone() {
  auto on_gone = handlers_.on_gone;
  close();
  if (on_gone) on_gone();
}

void session_writer::close() {
  if (is_closed_) return;
  is_closed_ = true;
  stall_timer_.cancel();
  queue_.clear();
  num_buffered_bytes_ = 0;
}

}  // namespace inflight::gateway
