#include <catch2/catch.hpp>

#include <cmath>

#include "core/bench/capacity_plan.hpp"
#include "core/model/formats/shapes.hpp"

using namespace inflight;
using namespace inflight::bench;


TEST_CASE("bench plan: Llama-3.1-8B in bf16 by hand", "[core][bench]") {
  plan_request r;
  r.model = *named_shape("llama-3.1-8b");
  auto p = make_capacity_plan(r);
  REQUIRE(p.has_value());
  // Embedding + untied classifier 2 x 128256 x 4096; per layer 2 norms, q/o 4096^2 each,
  // k/v 4096 x 1024 each, MLP 3 x 4096 x 14336; one final norm.
  const std::int64_t per_layer = 2 * 4096 + 2 * 4096ll * 4096 + 2 * 4096ll * 1024 + 3 * 4096ll * 14336;
  CHECK(p->num_parameters == 2 * 128256ll * 4096 + 32 * per_layer + 4096);
  CHECK(p->num_parameters == 8030261248ll);
  CHECK(p->weight_bytes / 1e9 == Approx(16.06).margin(0.005));
  CHECK(p->kv_bytes_per_token == 128.0 * 1024);  // 2 x 32 x 8 x 128 x 2
  const double usable = 80.0 * 1024 * 1024 * 1024 * 0.9;
  CHECK(p->usable_bytes == Approx(usable));
  CHECK(p->max_kv_tokens == std::int64_t((usable - 8030261248.0 * 2) / 131072));
  CHECK(p->max_sequences == p->max_kv_tokens / 2048);
  // Batch 1 decode reads the weights and 2048 tokens of KV: (16.06 GB + 268 MB) / 3.35 TB/s.
  REQUIRE(p->decode.front().batch == 1);
  CHECK(p->decode.front().step_s == Approx((8030261248.0 * 2 + 2048 * 131072.0) / 3.35e12));
  CHECK(p->decode.front().step_s * 1e3 == Approx(4.87).margin(0.01));
  CHECK(p->prefill_s == Approx(2.0 * 8030261248.0 * 2048 / 989e12));
  for (std::size_t i = 1; i < p->decode.size(); ++i) {
    CHECK(p->decode[i].step_s > p->decode[i - 1].step_s);
    CHECK(p->decode[i].tokens_per_s > p->decode[i - 1].tokens_per_s);
    CHECK(p->decode[i].fits == (std::int64_t(p->decode[i].batch) * 2048 <= p->max_kv_tokens));
  }
}

TEST_CASE("bench plan: weights larger than memory leave no KV", "[core][bench]") {
  plan_request r;
  r.model = *named_shape("llama-3.1-8b");
  r.hardware.memory_bytes = 16e9;
  auto p = make_capacity_plan(r);
  REQUIRE(p.has_value());
  CHECK(p->kv_budget_bytes < 0);
  CHECK(p->max_kv_tokens == 0);
  CHECK_FALSE(p->decode.front().fits);
  r.context = 0;
  CHECK_FALSE(make_capacity_plan(r).has_value());
}

TEST_CASE("bench plan: quantities with SI and binary prefixes", "[core][bench]") {
  const std::vector<std::string_view> bytes = {"B"}, bw = {"B/s"}, flops = {"FLOP/s", "FLOPS"};
  CHECK(*parse_quantity("80GiB", bytes) == 80.0 * 1024 * 1024 * 1024);
  CHECK(*parse_quantity("141GB", bytes) == Approx(141e9));
  CHECK(*parse_quantity("3.35TB/s", bw) == Approx(3.35e12));
  CHECK(*parse_quantity("989TFLOP/s", flops) == Approx(989e12));
  CHECK(*parse_quantity("1.5e12", flops) == Approx(1.5e12));
  CHECK(*parse_quantity("512Mi", bytes) == 512.0 * 1024 * 1024);
  CHECK_FALSE(parse_quantity("fast", bw).has_value());
  CHECK_FALSE(parse_quantity("3TB/h", bw).has_value());
  CHECK_FALSE(parse_quantity("-1GB", bytes).has_value());
}

TEST_CASE("bench plan: quantized weights and an f32 KV cache", "[core][bench]") {
  plan_request r;
  r.model = *named_shape("llama-3.1-8b");
  r.weight_value_bytes = 18.0 / 32.0;  // Q4_0: 32 values in 18 bytes
  r.kv_value_bytes = 4;
  auto p = make_capacity_plan(r);
  REQUIRE(p.has_value());
  CHECK(p->weight_bytes == Approx(8030261248.0 * 18 / 32));
  CHECK(p->kv_bytes_per_token == 256.0 * 1024);  // 2 x 32 x 8 x 128 x 4
  CHECK(p->decode.front().step_s == Approx((8030261248.0 * 18 / 32 + 2048 * 262144.0) / 3.35e12));
  r.weight_value_bytes = 0;
  CHECK_FALSE(make_capacity_plan(r).has_value());
}

TEST_CASE("bench plan: a mixture reads its chosen experts, more of them as the batch grows", "[core][bench]") {
  plan_request r;
  r.model = *named_shape("qwen3-30b-a3b");
  r.batch_sizes = {1, 16, 256};
  auto p = make_capacity_plan(r);
  REQUIRE(p.has_value());
  const auto& m = r.model;
  // Each layer's 128 experts are 3 x 2048 x 768 parameters each.
  const double expert = 3.0 * 2048 * 768 * 2 * 48;  // bytes of one expert in every layer, bf16
  CHECK(double(p->num_parameters - p->num_active_parameters) * 2 == Approx(expert * 120));
  CHECK(p->prefill_flops == Approx(2.0 * double(m.num_active_parameters()) * r.context));
  // One token reads 8 of 128 experts: the weights less 120 experts' bytes.
  const auto kv = [&](int b) { return double(b) * r.context * p->kv_bytes_per_token; };
  CHECK(p->decode[0].experts_read == Approx(8.0 / 128));
  CHECK(p->decode[0].bytes_per_step == Approx(p->weight_bytes - expert * 120 + kv(1)));
  // 16 tokens: 1 - (120/128)^16 = 64.4% of the experts.
  CHECK(p->decode[1].experts_read == Approx(1.0 - std::pow(120.0 / 128, 16)));
  CHECK(p->decode[2].experts_read > 0.999);
  CHECK(p->decode[2].bytes_per_step == Approx(p->weight_bytes + kv(256)).epsilon(1e-4));
}
