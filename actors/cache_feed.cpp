#include "actors/cache_feed.hpp"

namespace inflight {

void cache_feed::set_sink(std::shared_ptr<cache_sink> sink) {
  std::lock_guard lock(mutex_);
  sink_ = std::move(sink);
  last_.reset();
  is_active_.store(sink_ != nullptr, std::memory_order_relaxed);
}

void cache_feed::publish(const engine_report& report) {
  std::lock_guard lock(mutex_);
  if (!sink_) return;
  const bool is_same_load = last_ && last_->num_waiting == report.num_waiting &&
                            last_->num_running == report.num_running &&
                            last_->num_free_blocks == report.num_free_blocks;
  if (!report.is_full && report.added.empty() && report.evicted.empty() && is_same_load) return;
  sink_->on_report(report);
  last_ = engine_report{false, {}, {}, report.num_waiting, report.num_running, report.num_free_blocks,
                        report.num_total_blocks, report.block_size};
}

}  // namespace inflight
