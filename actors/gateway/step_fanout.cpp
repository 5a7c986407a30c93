#include "actors/gateway/step_fanout.hpp"

#include <algorithm>

namespace inflight::gateway {

step_subscription::step_subscription(std::shared_ptr<step_fanout> owner, std::size_t capacity, std::size_t max_seqs,
                                     std::string engine)
    : owner_(std::move(owner)), engine_(std::move(engine)), queue_(capacity, max_seqs) {}

step_subscription::~step_subscription() { owner_->unsubscribe(this); }

std::vector<step_summary> step_subscription::take() {
  std::lock_guard lock(owner_->mutex_);
  auto out = queue_.take();
  is_wake_armed_ = out.empty();
  return out;
}

void step_subscription::set_wake(std::function<void()> wake) {
  std::lock_guard lock(owner_->mutex_);
  wake_ = std::move(wake);
}

step_fanout::step_fanout(engine_api& eng, const server_settings& settings) : engine_(eng), settings_(settings) {}

api_result<std::shared_ptr<step_subscription>> step_fanout::try_subscribe(std::string engine) {
  std::lock_guard install(install_mutex_);
  std::shared_ptr<step_subscription> sub;
  {
    std::lock_guard lock(mutex_);
    if (int(subscribers_.size()) >= settings_.events_max_subscribers) {
      return std::unexpected(unavailable("the engine event feed has " + std::to_string(subscribers_.size()) +
                                             " subscribers, the most it takes (server.events_max_subscribers)",
                                         "too_many_subscribers"));
    }
    sub.reset(new step_subscription(shared_from_this(), std::size_t(settings_.events_queue_size),
                                    std::size_t(settings_.events_max_seqs), std::move(engine)));
    subscribers_.push_back(sub.get());
    if (subscribers_.size() > 1) return sub;
  }
  engine_.set_step_sink(shared_from_this());
  return sub;
}

void step_fanout::unsubscribe(step_subscription* sub) {
  std::lock_guard install(install_mutex_);
  {
    std::lock_guard lock(mutex_);
    std::erase(subscribers_, sub);
    if (!subscribers_.empty()) return;
  }
  engine_.set_step_sink(nullptr);
}

int step_fanout::num_subscribers() const {
  std::lock_guard lock(mutex_);
  return int(subscribers_.size());
}

void step_fanout::on_step(const step_summary& step) {
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard lock(mutex_);
    for (auto* sub : subscribers_) {
      if (sub->engine_ != step.engine) continue;
      sub->queue_.push(step);
      if (sub->is_wake_armed_ && sub->wake_) {
        sub->is_wake_armed_ = false;
        wakes.push_back(sub->wake_);
      }
    }
  }
  for (auto& wake : wakes) wake();
}

}  // namespace inflight::gateway
