#include "backends/debug_backend.hpp"

#include <chrono>
#include <cstdint>
#include <thread>

namespace inflight {
namespace {

class debug_backend final : public backend {
 public:
  debug_backend(std::unique_ptr<backend> inner, const debug_settings& s) : inner_(std::move(inner)), settings_(s) {}

  result<step_result> execute(const step_plan& plan) override {
    const std::int64_t step = ++num_steps_;
    if (settings_.step_delay_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(settings_.step_delay_s));
    const std::int64_t first = settings_.fail_step;
    if (first > 0 && step >= first && step < first + settings_.num_failed_steps) {
      return make_error(errc::backend_error, "injected failure of backend step " + std::to_string(step) +
                                                 " (debug.fail_step = " + std::to_string(first) + ")");
    }
    return inner_->execute(plan);
  }
  const model_config& config() const override { return inner_->config(); }
  int num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  int block_size() const override { return inner_->block_size(); }
  std::string name() const override { return inner_->name(); }
  /// Not a step: neither delayed nor counted, so `fail_step` counts served steps only.
  bool runs_adapters() const override { return inner_->runs_adapters(); }
  result<void> warm_up() override {
    if (settings_.fail_warm_up) return make_error(errc::backend_error, "injected failure (debug.fail_warm_up)");
    return inner_->warm_up();
  }

 private:
  std::unique_ptr<backend> inner_;
  debug_settings settings_;
  std::int64_t num_steps_ = 0;
};

}  // namespace

bool is_active(const debug_settings& s) { return s.step_delay_s > 0 || s.fail_step > 0 || s.fail_warm_up; }

std::unique_ptr<backend> make_debug_backend(std::unique_ptr<backend> inner, const debug_settings& s) {
  return std::make_unique<debug_backend>(std::move(inner), s);
}

}  // namespace inflight
