// `inflight bench forward`: forward-step time of the backend alone for ragged batches
// (decode steps at a given context, and prefills), no scheduler or actors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "apps/inflight/commands.hpp"
#include "apps/inflight/host_info.hpp"
#include "backends/cpu_backend.hpp"
#include "core/model/convert.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_loader.hpp"

namespace inflight::app {
namespace {

struct bench_forward_options {
  std::string model;
  std::string shape = "bench-20M";
  std::vector<int> batches = {1, 8, 32};
  int context = 256;
  int steps = 20;
  int prefill = 512;
  int threads = 0;
  bool pin = false;
  std::string isa;
  std::string weight_dtype = "auto";
  std::string load_mode = "auto";
  std::string kv_dtype = "f32";
  bool profile = false;
  bool floor = false;
  std::vector<int> drafts;  ///< speculative decoding: drafted tokens per sequence to time verify steps with
};

/// Random weights of --shape, or --model (any format the loader reads), as --weight-dtype says.
std::shared_ptr<const model_weights> bench_weights(const bench_forward_options& o) {
  std::shared_ptr<model_weights> w;
  if (o.model.empty()) {
    auto c = named_shape(o.shape);
    if (!c) fail("unknown shape " + o.shape);
    auto dummy = make_dummy_weights(*c, 0);
    if (!dummy) fail(dummy.error().message);
    w = std::make_shared<model_weights>(std::move(*dummy));
  } else {
    model_settings s;
    s.path = o.model;
    s.load_mode = o.load_mode;
    if (resolve_format(s) == "llama2c") {  // no tokenizer needed
      auto loaded = load_llama2c(o.model);
      if (!loaded) fail(loaded.error().message);
      w = std::make_shared<model_weights>(std::move(*loaded));
    } else {
      auto m = load_model(s);
      if (!m) fail(m.error().message);
      w = std::const_pointer_cast<model_weights>(m->weights);  // the only owner once m is gone
    }
  }
  if (o.weight_dtype != "auto") {
    auto recipe = try_parse_recipe(o.weight_dtype);
    if (!recipe) fail("--weight-dtype: " + recipe.error().message);
    if (auto ok = try_quantize_weights(*w, *recipe); !ok) fail(ok.error().message);
  }
  return w;
}

/// Bytes of every matrix, norm and bias: what a decode step reads besides the KV cache.
double weight_bytes(const model_weights& w) {
  double n = double(w.token_embedding.bytes().size() + w.classifier.bytes().size()) + 4.0 * w.final_norm.size();
  for (const auto& l : w.layers) {
    for (const auto* t : matrices_of(l)) n += double(t->bytes().size());
    n += 4.0 * double(l.attn_norm.size() + l.ffn_norm.size() + l.bq.size() + l.bk.size() + l.bv.size());
  }
  return n;
}

/// Bytes of a mixture's experts a decode step of `batch` tokens reads: all of them less
/// those no token chose, 1 - (1 - k / E)^batch of them when tokens choose at random.
double unread_expert_bytes(const model_weights& w, int batch) {
  const auto& m = w.config.moe;
  if (!m.enabled()) return 0.0;
  double experts = 0.0;
  for (const auto& l : w.layers) {
    experts += double(l.gate_exps.bytes().size() + l.up_exps.bytes().size() + l.down_exps.bytes().size());
  }
  return experts * std::pow(1.0 - double(m.experts_per_token) / m.num_experts, double(batch));
}

/// Bytes a decode step reads from the KV cache: every cached position's K and V in every
/// layer (a windowed layer: those in its window).
double kv_bytes_per_step(const model_config& c, int batch, int context, const std::string& kv_dtype) {
  const double element = kv_dtype == "f32" ? 4.0 : 2.0;
  return double(batch) * double(c.kv_positions_read(context)) * 2.0 * c.kv_dim() * element;
}

/// Sustained read bandwidth in bytes/s with `threads` threads, each streaming its slice of
/// a buffer several times the size of the caches (best of five passes): the floor a decode
/// step that reads all the weights cannot beat.
double measure_read_bandwidth(int threads) {
  const std::size_t words = std::size_t(1) << 27;  // 1 GiB of 64-bit words
  std::vector<std::uint64_t> buf(words);
  threads = std::max(threads, 1);
  std::vector<std::uint64_t> sums(threads);
  // Touch the pages on the threads that read them, as the backend's first step does.
  auto pass = [&](bool write) {
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] {
        const std::size_t begin = words * t / threads, end = words * (t + 1) / threads;
        if (write) {
          for (std::size_t i = begin; i < end; ++i) buf[i] = i;
          return;
        }
        std::uint64_t a = 0, b = 0, c = 0, d = 0;
        std::size_t i = begin;
        for (; i + 4 <= end; i += 4) a += buf[i], b += buf[i + 1], c += buf[i + 2], d += buf[i + 3];
        for (; i < end; ++i) a += buf[i];
        sums[t] = a + b + c + d;
      });
    }
    for (auto& th : team) th.join();
  };
  pass(true);
  double best = 0.0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pass(false);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(words * sizeof(std::uint64_t)) / s);
  }
  std::uint64_t check = 0;
  for (auto v : sums) check += v;
  if (check != (std::uint64_t(words) * (words - 1)) / 2) fail("bandwidth probe: the buffer did not read back");
  return best;
}

/// A plan where each of `batch` sequences processes `tokens` tokens from `start`.
step_plan make_plan(int batch, int start, int tokens, int blocks_per_seq, int block_size, bool do_sample) {
  step_plan plan;
  for (int s = 0; s < batch; ++s) {
    seq_step st;
    st.id = seq_id(s);
    st.tokens.assign(tokens, 3 + (s % 100));
    st.start_position = start;
    for (int b = 0; b < blocks_per_seq; ++b) st.block_table.push_back(s * blocks_per_seq + b);
    st.do_sample = do_sample;
    st.params.temperature = 0.0f;
    plan.seqs.push_back(std::move(st));
  }
  (void)block_size;
  return plan;
}

cpu_backend_options backend_options(const bench_forward_options& o) {
  cpu_backend_options b;
  b.num_threads = o.threads;
  b.pin_threads = o.pin;
  if (o.isa == "avx512_vnni") b.isa = kernels::cpu::cpu_isa::avx512_vnni;
  if (o.isa == "avx512") b.isa = kernels::cpu::cpu_isa::avx512;
  if (o.isa == "avx2") b.isa = kernels::cpu::cpu_isa::avx2;
  if (o.isa == "portable") b.isa = kernels::cpu::cpu_isa::portable;
  if (o.kv_dtype == "f16") b.kv_type = kernels::cpu::kv_type::f16;
  if (o.kv_dtype == "bf16") b.kv_type = kernels::cpu::kv_type::bf16;
  return b;
}

/// Milliseconds per step in each stage, and its share of the step.
void print_profile(const char* title, const kernels::cpu::stage_times& t) {
  double total = 0.0;
  for (double s : t.seconds) total += s;
  if (t.num_steps == 0 || total <= 0.0) return;
  std::printf("%s: %.3f ms per step over %d steps\n", title, total * 1e3 / t.num_steps, t.num_steps);
  for (int i = 0; i < kernels::cpu::num_forward_stages; ++i) {
    std::printf("  %-10s %9.3f ms %5.1f%%\n", kernels::cpu::to_string(kernels::cpu::forward_stage(i)),
                t.seconds[i] * 1e3 / t.num_steps, 100.0 * t.seconds[i] / total);
  }
}

double time_step(cpu_backend& be, const step_plan& plan) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = be.execute(plan);
  if (!r) fail(r.error().message);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Tokens one checked draft of k gives at acceptance a (each drafted token kept with
/// probability a after the ones before it): 1 + a + ... + a^k.
double expected_tokens(double a, int k) {
  double sum = 0.0, p = 1.0;
  for (int i = 0; i <= k; ++i, p *= a) sum += p;
  return sum;
}

/// The acceptance at which a verify step of k drafts gives as many tokens per second as
/// a plain decode step: expected_tokens(a, k) = ratio (the verify step's time over the
/// decode step's); 1 when even a sure draft does not pay.
double break_even(double ratio, int k) {
  if (expected_tokens(1.0, k) <= ratio) return 1.0;
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (expected_tokens(mid, k) < ratio ? lo : hi) = mid;
  }
  return hi;
}

/// Speculative decoding's verify cost: steps of `batch` sequences that each check k
/// drafted tokens (k + 1 rows, every row sampled as the engine does), against k = 0.
void run_verify_curve(cpu_backend& be, const bench_forward_options& o, int blocks_per_seq, int block_size) {
  std::printf("\nverify steps (speculative decoding): k drafted tokens per sequence, %d-token context\n", o.context);
  std::printf("%-6s %-4s %-10s %-8s %-16s %-10s %-8s %-8s %-8s\n", "batch", "k", "step ms", "x k=0",
              "tokens/s @100%", "break-even", "x @0.5", "x @0.7", "x @0.9");
  for (int batch : o.batches) {
    double base = 0.0;
    std::vector<int> ks = o.drafts;
    if (std::find(ks.begin(), ks.end(), 0) == ks.end()) ks.insert(ks.begin(), 0);
    for (int k : ks) {
      auto plan = make_plan(batch, o.context, 1 + k, blocks_per_seq, block_size, true);
      for (auto& s : plan.seqs) s.num_draft = k;  // drafts equal to what the rows sample are kept: a draft of
                                                  // random weights is refuted early, the rows still all run
      (void)time_step(be, plan);                  // the first one warms this shape
      double total = 0.0;
      for (int i = 0; i < o.steps; ++i) total += time_step(be, plan);
      const double step = total / o.steps;
      if (k == 0) base = step;
      const double ratio = step / base;
      const auto speedup = [&](double a) { return expected_tokens(a, k) / ratio; };
      std::printf("%-6d %-4d %-10.3f %-8.2f %-16.1f %-10.2f %-8.2f %-8.2f %-8.2f\n", batch, k, step * 1e3, ratio,
                  batch * (k + 1) / step, break_even(ratio, k), speedup(0.5), speedup(0.7), speedup(0.9));
    }
  }
  std::printf("(x @a: tokens/s against plain decoding when each drafted token is kept with probability a; "
              "break-even: the a where it is 1)\n");
}

void run_bench_forward(const bench_forward_options& o) {
  auto weights = bench_weights(o);
  const int block_size = 16;
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const int max_draft = o.drafts.empty() ? 0 : *std::max_element(o.drafts.begin(), o.drafts.end());
  const int blocks_per_seq =
      (std::max({o.context + o.steps, o.prefill, o.context + max_draft + 1}) + block_size - 1) / block_size;
  auto be = cpu_backend::create(weights, {block_size, max_batch * blocks_per_seq, 0}, backend_options(o));
  if (!be) fail(be.error().message);
  // As the engine does before it serves, and llama.cpp's bench before it times.
  if (auto ok = (*be)->warm_up(); !ok) fail(ok.error().message);
  const auto& c = weights->config;
  std::printf("model: dim %d, %d layers, %d heads (%d kv), vocab %d; %d threads, %s kernels\n", c.dim, c.num_layers,
              c.num_heads, c.num_kv_heads, c.vocab_size, (*be)->num_threads(), kernels::cpu::to_string((*be)->isa()));
  std::printf("weights: %s, %.1f MB; KV cache: %s\n", weight_dtype_list(*weights).c_str(), weight_bytes(*weights) / 1e6,
              o.kv_dtype.c_str());
  const double bandwidth = o.floor ? measure_read_bandwidth((*be)->num_threads()) : 0.0;
  if (o.floor) {
    std::printf("memory: %.1f GB/s read with %d threads; floor = (weights + KV read per step) / that\n", bandwidth / 1e9,
                (*be)->num_threads());
  }
  std::printf("%-8s %-10s %-14s %-14s %-18s%s\n", "batch", "context", "step ms", "tokens/s", "prefill tokens/s",
              o.floor ? " floor tokens/s" : "");
  kernels::cpu::stage_times decode_times;
  for (int batch : o.batches) {
    // Prefill every sequence's `context` tokens in one step, then time decode steps after it.
    const double prefill = time_step(**be, make_plan(batch, 0, o.context, blocks_per_seq, block_size, true));
    if (o.profile) (*be)->set_stage_times(&decode_times);
    double total = 0.0;
    for (int i = 0; i < o.steps; ++i) {
      total += time_step(**be, make_plan(batch, o.context + i, 1, blocks_per_seq, block_size, true));
    }
    (*be)->set_stage_times(nullptr);
    const double step = total / o.steps;
    std::printf("%-8d %-10d %-14.3f %-14.1f %-18.1f", batch, o.context, step * 1e3, batch / step,
                batch * o.context / prefill);
    if (o.floor) {
      const double bytes = weight_bytes(*weights) - unread_expert_bytes(*weights, batch) +
                           kv_bytes_per_step(c, batch, o.context, o.kv_dtype);
      std::printf(" %.1f", batch * bandwidth / bytes);
    }
    std::printf("\n");
  }
  kernels::cpu::stage_times prefill_times;
  if (o.profile) (*be)->set_stage_times(&prefill_times);
  const double prefill = time_step(**be, make_plan(1, 0, o.prefill, blocks_per_seq, block_size, true));
  (*be)->set_stage_times(nullptr);
  if (!o.drafts.empty()) run_verify_curve(**be, o, blocks_per_seq, block_size);
  std::printf("prefill of %d tokens: %.2f ms (%.0f tokens/s)\n", o.prefill, prefill * 1e3, o.prefill / prefill);
  if (o.profile) {
    print_profile("decode steps (all batch sizes)", decode_times);
    print_profile("prefill", prefill_times);
  }
}

}  // namespace

void add_bench_forward_command(CLI::App& bench) {
  auto o = std::make_shared<bench_forward_options>();
  auto* cmd = bench.add_subcommand("forward", "Time backend forward steps for ragged batches (no scheduler)");
  cmd->add_option("--model", o->model, "a model file or folder (default: random weights of --shape)");
  cmd->add_option("--shape", o->shape, "shape for random weights")->capture_default_str();
  cmd->add_option("--batch", o->batches, "batch sizes")->delimiter(',')->capture_default_str();
  cmd->add_option("--context", o->context, "tokens already in each sequence's cache")->capture_default_str();
  cmd->add_option("--steps", o->steps, "decode steps timed per batch size")->capture_default_str();
  cmd->add_option("--draft", o->drafts,
                  "speculative decoding: also time verify steps of k drafted tokens per sequence, for each k given "
                  "(e.g. 1,2,4,8), with the speedup they imply and the acceptance where they break even")
      ->delimiter(',');
  cmd->add_option("--prefill", o->prefill, "prompt length of the timed prefill")->capture_default_str();
  cmd->add_option("--threads", o->threads, "compute threads (0 = one per physical core)")->capture_default_str();
  cmd->add_option("--pin", o->pin, "pin the compute threads to cores")->capture_default_str();
  cmd->add_option("--isa", o->isa, "kernels: avx512_vnni | avx512 | avx2 | portable (default: the best this CPU runs)")
      ->check(CLI::IsMember({"avx512_vnni", "avx512", "avx2", "portable"}));
  cmd->add_option("--weight-dtype", o->weight_dtype, "convert the matrices: auto (as loaded) | f32 | f16 | bf16 | q8_0 | "
                                                     "q4_0 | q4_k | q5_k | q6_k | q4_k_m")
      ->capture_default_str();
  cmd->add_option("--load-mode", o->load_mode, "weight files: auto | mmap | read (model.load_mode)")
      ->check(CLI::IsMember({"auto", "mmap", "read"}));
  cmd->add_option("--kv-dtype", o->kv_dtype, "KV cache elements")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--profile", o->profile, "print the time per stage of the forward pass");
  cmd->add_flag("--floor", o->floor,
                "measure the read bandwidth and print each batch's memory floor (weights + KV bytes per step; of a "
                "mixture's experts, the share its tokens choose at random)");
  cmd->callback([o] { run_bench_forward(*o); });
}

}  // namespace inflight::app
