#include "config/deployment_keys.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "config/units.hpp"
#include "core/engine/spec/spec_config.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_family.hpp"

namespace inflight::config {
namespace {

using setter = std::function<result<void>(deployment&, const toml::node&)>;

struct key_spec {
  std::string expected;  ///< for messages
  setter set;
};

std::string describe(const toml::node& n) {
  std::ostringstream ss;
  if (n.is_string()) {
    ss << '"' << n.as_string()->get() << '"';
  } else if (n.is_value()) {
    n.visit([&](const auto& v) {
      if constexpr (toml::is_value<decltype(v)>) ss << v.get();
    });
  } else {
    ss << (n.is_table() ? "a table" : "an array");
  }
  return ss.str();
}

std::unexpected<error> bad_value(const std::string& key, const toml::node& n, const std::string& expected) {
  return std::unexpected(error{errc::invalid_argument,
                               "config key '" + key + "': got " + describe(n) + ", expected " + expected});
}

/// The value of an integer node; nullopt for any other node. (node::value<int64_t>()
/// also converts floats, which is undefined for one out of range such as 2e40.)
std::optional<std::int64_t> integer_of(const toml::node& n) {
  if (const auto* i = n.as_integer()) return i->get();
  return std::nullopt;
}

/// Integer setting within [lo, hi].
template <class S, class T>
key_spec integer(S deployment::*section, T S::*member, std::int64_t lo, std::int64_t hi, std::string key) {
  std::string expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            const auto v = integer_of(n);
            if (!v || *v < lo || *v > hi) return bad_value(key, n, expected);
            (d.*section).*member = static_cast<T>(*v);
            return {};
          }};
}

template <class S, class T>
key_spec number(S deployment::*section, T S::*member, double lo, double hi, std::string key) {
  std::ostringstream ss;
  ss << "a number in [" << lo << ", " << hi << "]";
  std::string expected = ss.str();
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            auto v = n.value<double>();
            if (!(n.is_floating_point() || n.is_integer()) || !v || !std::isfinite(*v) || *v < lo || *v > hi) {
              return bad_value(key, n, expected);
            }
            (d.*section).*member = static_cast<T>(*v);
            return {};
          }};
}

template <class S>
key_spec boolean(S deployment::*section, bool S::*member, std::string key) {
  return {"a boolean", [=](deployment& d, const toml::node& n) -> result<void> {
            if (!n.is_boolean()) return bad_value(key, n, "a boolean");
            (d.*section).*member = n.as_boolean()->get();
            return {};
          }};
}

template <class S>
key_spec text(S deployment::*section, std::string S::*member, std::vector<std::string> choices, std::string key) {
  std::string expected = "a string";
  if (!choices.empty()) {
    expected = "one of";
    for (const auto& c : choices) expected += " \"" + c + "\"";
  }
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            if (!n.is_string()) return bad_value(key, n, expected);
            const auto& s = n.as_string()->get();
            if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end()) {
              return bad_value(key, n, expected);
            }
            (d.*section).*member = s;
            return {};
          }};
}

template <class S>
key_spec bytes(S deployment::*section, std::int64_t S::*member, std::string key, std::int64_t min = 1) {
  std::string expected = "a size in bytes (an integer, or a string like \"256MiB\" or \"2GiB\")";
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            result<std::int64_t> v = make_error(errc::invalid_argument, "");
            if (const auto i = integer_of(n)) v = *i;
            if (n.is_string()) v = parse_bytes(n.as_string()->get());
            if (!v || *v < min) return bad_value(key, n, expected);
            d.*section.*member = *v;
            return {};
          }};
}

/// A duration (parse_duration): a number of seconds or a string like "5m"; negative = forever.
template <class S>
key_spec duration(S deployment::*section, double S::*member, std::string key) {
  std::string expected = "a duration (seconds, or a string like \"30s\", \"5m\", \"1h\"; negative = forever)";
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            result<double> v = make_error(errc::invalid_argument, "");
            if (n.is_floating_point() || n.is_integer()) v = *n.value<double>() < 0 ? -1.0 : *n.value<double>();
            if (n.is_string()) v = parse_duration(n.as_string()->get());
            if (!v || !std::isfinite(*v)) return bad_value(key, n, expected);
            d.*section.*member = *v;
            return {};
          }};
}

template <class T>
key_spec dummy_int(T dummy_shape::*member, std::int64_t lo, std::int64_t hi, std::string key) {
  std::string expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            const auto v = integer_of(n);
            if (!v || *v < lo || *v > hi) return bad_value(key, n, expected);
            d.model.dummy.*member = static_cast<T>(*v);
            return {};
          }};
}

/// An array of strings; `check` (when given) returns why one is wrong, "" when it is fine.
template <class S>
key_spec text_list(S deployment::*section, std::vector<std::string> S::*member, std::string key,
                   std::function<std::string(const std::string&)> check = {}) {
  const std::string expected = "an array of strings";
  return {expected, [=](deployment& d, const toml::node& n) -> result<void> {
            const auto* array = n.as_array();
            if (!array) return bad_value(key, n, expected);
            std::vector<std::string> out;
            for (const auto& item : *array) {
              if (!item.is_string()) return bad_value(key, item, "a string in " + expected);
              const auto& v = item.as_string()->get();
              if (check) {
                if (auto why = check(v); !why.empty()) return bad_value(key, item, why);
              }
              out.push_back(v);
            }
            (d.*section).*member = std::move(out);
            return {};
          }};
}

/// "host:port" with a port in [1, 65535]; "" when it is one, else what is expected.
std::string check_endpoint(const std::string& text, int min_port = 1) {
  const std::string expected = "\"host:port\" with a port in [" + std::to_string(min_port) + ", 65535]";
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return expected;
  const auto port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return expected;
  const int p = std::stoi(port);
  return p >= min_port && p <= 65535 ? "" : expected;
}

/// An API key: printable ASCII without spaces (one header token).
std::string check_api_key(const std::string& key) {
  if (key.empty()) return "a non-empty key";
  for (const unsigned char c : key)
    if (c <= 0x20 || c >= 0x7f) return "a key of printable ASCII characters without spaces";
  return "";
}

const std::map<std::string, key_spec>& specs() {
  using D = deployment;
  static const std::map<std::string, key_spec> table = [] {
    std::map<std::string, key_spec> t;
    auto add = [&](const std::string& key, auto make) { t.emplace(key, make(key)); };
    add("server.host", [](auto k) { return text(&D::server, &server_settings::host, {}, k); });
    add("server.port", [](auto k) { return integer(&D::server, &server_settings::port, 0, 65535, k); });
    add("server.io_threads", [](auto k) { return integer(&D::server, &server_settings::io_threads, 1, 256, k); });
    add("server.max_body_bytes",
        [](auto k) { return integer(&D::server, &server_settings::max_body_bytes, 1024, 1ll << 32, k); });
    add("server.max_header_bytes",
        [](auto k) { return integer(&D::server, &server_settings::max_header_bytes, 1024, 1 << 24, k); });
    add("server.max_choices", [](auto k) { return integer(&D::server, &server_settings::max_choices, 1, 1 << 16, k); });
    add("server.max_waiting_requests",
        [](auto k) { return integer(&D::server, &server_settings::max_waiting_requests, 1, 1 << 24, k); });
    add("server.max_waiting_tokens",
        [](auto k) { return integer(&D::server, &server_settings::max_waiting_tokens, 1, 1ll << 40, k); });
    add("server.max_queue_time_s",
        [](auto k) { return number(&D::server, &server_settings::max_queue_time_s, 0.0, 1e7, k); });
    add("server.retry_after_s", [](auto k) { return integer(&D::server, &server_settings::retry_after_s, 0, 86400, k); });
    add("server.linger_s", [](auto k) { return number(&D::server, &server_settings::linger_s, 0.0, 3600.0, k); });
    add("server.ws_handshake_timeout_s",
        [](auto k) { return number(&D::server, &server_settings::ws_handshake_timeout_s, 0.1, 3600.0, k); });
    add("server.max_stream_buffer_bytes",
        [](auto k) { return integer(&D::server, &server_settings::max_stream_buffer_bytes, 1024, 1ll << 32, k); });
    add("server.responses_store_max",
        [](auto k) { return integer(&D::server, &server_settings::responses_store_max, 0, 1 << 24, k); });
    add("server.responses_store_ttl_s",
        [](auto k) { return number(&D::server, &server_settings::responses_store_ttl_s, 0.0, 1e9, k); });
    add("server.request_timeout_s",
        [](auto k) { return number(&D::server, &server_settings::request_timeout_s, 0.0, 1e7, k); });
    add("server.idle_timeout_s",
        [](auto k) { return number(&D::server, &server_settings::idle_timeout_s, 0.1, 1e7, k); });
    add("server.shutdown_grace_s",
        [](auto k) { return number(&D::server, &server_settings::shutdown_grace_s, 0.0, 3600.0, k); });
    add("server.ws_max_queued_messages",
        [](auto k) { return integer(&D::server, &server_settings::ws_max_queued_messages, 1, 1 << 20, k); });
    add("server.enable_ui", [](auto k) { return boolean(&D::server, &server_settings::enable_ui, k); });
    add("server.events_max_subscribers",
        [](auto k) { return integer(&D::server, &server_settings::events_max_subscribers, 0, 1024, k); });
    add("server.events_queue_size",
        [](auto k) { return integer(&D::server, &server_settings::events_queue_size, 2, 1 << 16, k); });
    add("server.events_max_seqs",
        [](auto k) { return integer(&D::server, &server_settings::events_max_seqs, 1, 1 << 16, k); });
    add("server.api_keys", [](auto k) { return text_list(&D::server, &server_settings::api_keys, k, check_api_key); });
    add("server.api_key_file", [](auto k) { return text(&D::server, &server_settings::api_key_file, {}, k); });
    add("server.metrics_open", [](auto k) { return boolean(&D::server, &server_settings::metrics_open, k); });
    add("server.tls_cert_file", [](auto k) { return text(&D::server, &server_settings::tls_cert_file, {}, k); });
    add("server.tls_key_file", [](auto k) { return text(&D::server, &server_settings::tls_key_file, {}, k); });
    add("server.max_loaded_models",
        [](auto k) { return integer(&D::server, &server_settings::max_loaded_models, 0, 1 << 16, k); });
    add("server.memory_budget", [](auto k) { return bytes(&D::server, &server_settings::memory_budget_bytes, k, 0); });
    add("server.keep_alive", [](auto k) { return duration(&D::server, &server_settings::keep_alive_s, k); });
    add("lora.max_loras_per_step",
        [](auto k) { return integer(&D::lora, &lora_settings::max_loras_per_step, 0, 1 << 16, k); });
    add("lora.max_cpu_loras", [](auto k) { return integer(&D::lora, &lora_settings::max_cpu_loras, 0, 1 << 20, k); });
    add("lora.runtime_updates", [](auto k) { return boolean(&D::lora, &lora_settings::runtime_updates, k); });
    add("cluster.bind", [](auto k) -> key_spec {
      const std::string expected = "\"\" or \"host:port\" with a port in [0, 65535]";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                if (!n.is_string()) return bad_value(k, n, expected);
                const auto& v = n.as_string()->get();
                if (!v.empty() && !check_endpoint(v, 0).empty()) return bad_value(k, n, expected);
                d.cluster.bind = v;
                return {};
              }};
    });
    add("cluster.tls", [](auto k) { return boolean(&D::cluster, &cluster_settings::tls, k); });
    add("cluster.cert_file", [](auto k) { return text(&D::cluster, &cluster_settings::cert_file, {}, k); });
    add("cluster.key_file", [](auto k) { return text(&D::cluster, &cluster_settings::key_file, {}, k); });
    add("cluster.ca_file", [](auto k) { return text(&D::cluster, &cluster_settings::ca_file, {}, k); });
    add("cluster.heartbeat_interval_s",
        [](auto k) { return number(&D::cluster, &cluster_settings::heartbeat_interval_s, 0.01, 3600.0, k); });
    add("cluster.connection_timeout_s",
        [](auto k) { return number(&D::cluster, &cluster_settings::connection_timeout_s, 0.05, 86400.0, k); });
    add("router.engines",
        [](auto k) {
          return text_list(&D::router, &router_settings::engines, k, [](const std::string& e) { return check_endpoint(e); });
        });
    add("router.policy", [](auto k) -> key_spec {
      return {"a policy name", [k](deployment& d, const toml::node& n) -> result<void> {
                if (!n.is_string() || n.as_string()->get().empty()) return bad_value(k, n, "a policy name");
                d.router.policy = n.as_string()->get();
                return {};
              }};
    });
    add("router.request_timeout_s",
        [](auto k) { return number(&D::router, &router_settings::request_timeout_s, 0.01, 86400.0, k); });
    add("router.reconnect_interval_s",
        [](auto k) { return number(&D::router, &router_settings::reconnect_interval_s, 0.01, 3600.0, k); });
    add("model.path", [](auto k) { return text(&D::model, &model_settings::path, {}, k); });
    add("model.format",
        [](auto k) { return text(&D::model, &model_settings::format, {"auto", "llama2c", "hf", "gguf", "dummy"}, k); });
    add("model.hf_token_file", [](auto k) { return text(&D::model, &model_settings::hf_token_file, {}, k); });
    add("model.fallback", [](auto k) { return text(&D::model, &model_settings::fallback, {"", "dummy"}, k); });
    add("model.tokenizer", [](auto k) { return text(&D::model, &model_settings::tokenizer, {}, k); });
    add("model.name", [](auto k) { return text(&D::model, &model_settings::name, {}, k); });
    add("model.dtype", [](auto k) {
      return text(&D::model, &model_settings::dtype, {"auto", "float32", "bfloat16", "float16"}, k);
    });
    add("model.weight_dtype", [](auto k) {
      return text(&D::model, &model_settings::weight_dtype,
                  {"auto", "f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_1", "q5_1", "iq4_nl", "iq4_xs", "q2_k", "q3_k",
                   "q4_k", "q5_k", "q6_k", "mxfp4", "q4_k_m"},
                  k);
    });
    add("model.load_mode",
        [](auto k) { return text(&D::model, &model_settings::load_mode, {"auto", "mmap", "read"}, k); });
    add("model.max_context", [](auto k) { return integer(&D::model, &model_settings::max_context, 0, 1 << 22, k); });
    add("model.chat_template", [](auto k) { return text(&D::model, &model_settings::chat_template, {}, k); });
    add("model.reasoning_parser", [](auto k) {
      return text(&D::model, &model_settings::reasoning_parser, {"auto", "none", "think", "deepseek_r1", "qwen3"}, k);
    });
    add("model.tool_call_format", [](auto k) {
      return text(&D::model, &model_settings::tool_call_format, {"auto", "hermes", "llama3_json", "json"}, k);
    });
    add("model.config_json", [](auto k) { return text(&D::model, &model_settings::config_json, {}, k); });
    add("model.dummy.hidden_size", [](auto k) { return dummy_int(&dummy_shape::hidden_size, 2, 1 << 16, k); });
    add("model.dummy.intermediate_size",
        [](auto k) { return dummy_int(&dummy_shape::intermediate_size, 1, 1 << 18, k); });
    add("model.dummy.num_layers", [](auto k) { return dummy_int(&dummy_shape::num_layers, 1, 1024, k); });
    add("model.dummy.num_heads", [](auto k) { return dummy_int(&dummy_shape::num_heads, 1, 1024, k); });
    add("model.dummy.num_kv_heads", [](auto k) { return dummy_int(&dummy_shape::num_kv_heads, 1, 1024, k); });
    add("model.dummy.head_dim", [](auto k) { return dummy_int(&dummy_shape::head_dim, 0, 1024, k); });
    add("model.dummy.num_experts", [](auto k) { return dummy_int(&dummy_shape::num_experts, 0, 4096, k); });
    add("model.dummy.experts_per_token", [](auto k) { return dummy_int(&dummy_shape::experts_per_token, 0, 4096, k); });
    add("model.dummy.expert_intermediate_size",
        [](auto k) { return dummy_int(&dummy_shape::expert_intermediate_size, 0, 1 << 20, k); });
    add("model.dummy.vocab_size", [](auto k) { return dummy_int(&dummy_shape::vocab_size, 259, 1 << 20, k); });
    add("model.dummy.max_position", [](auto k) { return dummy_int(&dummy_shape::max_position, 16, 1 << 22, k); });
    add("model.dummy.seed", [](auto k) { return dummy_int(&dummy_shape::seed, 0, INT64_MAX, k); });
    add("model.dummy.tied_embeddings", [](auto k) -> key_spec {
      return {"a boolean", [k](deployment& d, const toml::node& n) -> result<void> {
                if (!n.is_boolean()) return bad_value(k, n, "a boolean");
                d.model.dummy.tied_embeddings = n.as_boolean()->get();
                return {};
              }};
    });
    add("model.dummy.family", [](auto k) -> key_spec {
      std::string expected = "one of";
      for (const auto& name : family_names()) expected += " \"" + name + "\"";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                if (!n.is_string() || find_family(n.as_string()->get()) == nullptr) return bad_value(k, n, expected);
                d.model.dummy.family = n.as_string()->get();
                return {};
              }};
    });
    add("model.dummy.rope_theta", [](auto k) -> key_spec {
      return {"a positive number", [k](deployment& d, const toml::node& n) -> result<void> {
                auto v = n.value<double>();
                if (!(n.is_floating_point() || n.is_integer()) || !v || *v <= 0) {
                  return bad_value(k, n, "a positive number");
                }
                d.model.dummy.rope_theta = float(*v);
                return {};
              }};
    });
    add("engine.backend", [](auto k) { return text(&D::engine, &engine_settings::backend, {"cpu", "cuda"}, k); });
    add("engine.threads", [](auto k) { return integer(&D::engine, &engine_settings::threads, 0, 1024, k); });
    add("engine.pin_threads", [](auto k) { return boolean(&D::engine, &engine_settings::pin_threads, k); });
    add("engine.block_size", [](auto k) { return integer(&D::engine, &engine_settings::block_size, 1, 1024, k); });
    add("engine.kv_memory", [](auto k) { return bytes(&D::engine, &engine_settings::kv_memory_bytes, k); });
    add("engine.kv_dtype",
        [](auto k) { return text(&D::engine, &engine_settings::kv_dtype, {"auto", "f32", "f16", "bf16"}, k); });
    add("engine.kv_blocks", [](auto k) { return integer(&D::engine, &engine_settings::kv_blocks, 0, 1 << 26, k); });
    add("engine.gpu_memory_utilization",
        [](auto k) { return number(&D::engine, &engine_settings::gpu_memory_utilization, 0.05, 0.99, k); });
    add("engine.cuda_decode_attention", [](auto k) {
      return text(&D::engine, &engine_settings::cuda_decode_attention, {"grouped", "mma", "per_head"}, k);
    });
    add("engine.cuda_prefill_attention", [](auto k) {
      return text(&D::engine, &engine_settings::cuda_prefill_attention, {"mma", "tiled"}, k);
    });
    add("engine.cuda_grammar_mask", [](auto k) {
      return text(&D::engine, &engine_settings::cuda_grammar_mask, {"host", "device"}, k);
    });
    add("engine.cuda_weights",
        [](auto k) { return text(&D::engine, &engine_settings::cuda_weights, {"expand", "file", "fp8"}, k); });
    add("engine.max_num_seqs",
        [](auto k) { return integer(&D::engine, &engine_settings::max_num_seqs, 1, 1 << 16, k); });
    add("engine.max_num_batched_tokens",
        [](auto k) { return integer(&D::engine, &engine_settings::max_num_batched_tokens, 1, 1 << 22, k); });
    add("engine.enable_prefix_caching",
        [](auto k) { return boolean(&D::engine, &engine_settings::enable_prefix_caching, k); });
    add("engine.unhealthy_after_failed_steps",
        [](auto k) { return integer(&D::engine, &engine_settings::unhealthy_after_failed_steps, 1, 1 << 20, k); });
    add("scheduler.policy", [](auto k) { return text(&D::scheduler, &scheduler_settings::policy, {}, k); });
    add("scheduler.plugin_dir", [](auto k) { return text(&D::scheduler, &scheduler_settings::plugin_dir, {}, k); });
    // Default latency targets (ms) for SLO-aware policies.
    add("scheduler.ttft_target_ms",
        [](auto k) { return number(&D::scheduler, &scheduler_settings::ttft_target_ms, 0.0, 3.6e6, k); });
    add("scheduler.tpot_target_ms",
        [](auto k) { return number(&D::scheduler, &scheduler_settings::tpot_target_ms, 0.0, 3.6e6, k); });
    add("speculative.method", [](auto k) -> key_spec {
      std::string expected = "one of";
      for (const auto& m : speculative_methods()) expected += " \"" + m + "\"";
      expected += ", or a drafter plugin's name";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                if (!n.is_string() || !is_speculative_method_name(n.as_string()->get())) return bad_value(k, n, expected);
                d.speculative.method = n.as_string()->get();
                return {};
              }};
    });
    add("speculative.num_speculative_tokens", [](auto k) {
      return integer(&D::speculative, &speculative_settings::num_speculative_tokens, 0, 16, k);
    });
    add("speculative.prompt_lookup_min",
        [](auto k) { return integer(&D::speculative, &speculative_settings::prompt_lookup_min, 1, 64, k); });
    add("speculative.prompt_lookup_max",
        [](auto k) { return integer(&D::speculative, &speculative_settings::prompt_lookup_max, 1, 64, k); });
    add("speculative.row_cost",
        [](auto k) { return number(&D::speculative, &speculative_settings::row_cost, 0.0, 100.0, k); });
    add("speculative.draft_model", [](auto k) { return text(&D::speculative, &speculative_settings::draft_model, {}, k); });
    add("speculative.draft_kv_memory",
        [](auto k) { return bytes(&D::speculative, &speculative_settings::draft_kv_memory_bytes, k); });
    add("speculative.learn_row_cost",
        [](auto k) { return boolean(&D::speculative, &speculative_settings::learn_row_cost, k); });
    add("rerank.enabled", [](auto k) -> key_spec {
      const std::string expected = "true, false or \"auto\"";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                if (n.is_boolean()) {
                  d.rerank.mode = n.as_boolean()->get() ? rerank_mode::required : rerank_mode::off;
                } else if (n.is_string() && n.as_string()->get() == "auto") {
                  d.rerank.mode = rerank_mode::automatic;
                } else {
                  return bad_value(k, n, expected);
                }
                return {};
              }};
    });
    add("rerank.template", [](auto k) { return text(&D::rerank, &rerank_settings::prompt_template, {}, k); });
    add("rerank.instruction", [](auto k) { return text(&D::rerank, &rerank_settings::instruction, {}, k); });
    add("rerank.yes_word", [](auto k) { return text(&D::rerank, &rerank_settings::yes_word, {}, k); });
    add("rerank.no_word", [](auto k) { return text(&D::rerank, &rerank_settings::no_word, {}, k); });
    add("rerank.max_documents",
        [](auto k) { return integer(&D::rerank, &rerank_settings::max_documents, 1, 1 << 20, k); });
    add("embeddings.enabled", [](auto k) { return boolean(&D::embeddings, &embeddings_settings::enabled, k); });
    add("embeddings.pooling", [](auto k) -> key_spec {
      const std::string expected = "one of \"auto\" \"last\" \"mean\" \"first\"";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                const bool is_auto = n.is_string() && n.as_string()->get() == "auto";
                const auto pooling = n.is_string() ? try_pooling_from_name(n.as_string()->get()) : std::nullopt;
                if (!is_auto && !pooling) return bad_value(k, n, expected);
                d.embeddings.pooling = pooling;
                return {};
              }};
    });
    add("embeddings.normalize", [](auto k) -> key_spec {
      const std::string expected = "true, false or \"auto\"";
      return {expected, [k, expected](deployment& d, const toml::node& n) -> result<void> {
                if (n.is_boolean()) {
                  d.embeddings.normalize = n.as_boolean()->get();
                } else if (n.is_string() && n.as_string()->get() == "auto") {
                  d.embeddings.normalize.reset();
                } else {
                  return bad_value(k, n, expected);
                }
                return {};
              }};
    });
    add("embeddings.matryoshka", [](auto k) { return boolean(&D::embeddings, &embeddings_settings::matryoshka, k); });
    add("embeddings.query_prefix",
        [](auto k) { return text(&D::embeddings, &embeddings_settings::query_prefix, {}, k); });
    add("embeddings.append_eos", [](auto k) { return boolean(&D::embeddings, &embeddings_settings::append_eos, k); });
    add("embeddings.max_inputs",
        [](auto k) { return integer(&D::embeddings, &embeddings_settings::max_inputs, 1, 1 << 20, k); });
    add("embeddings.max_input_tokens",
        [](auto k) { return integer(&D::embeddings, &embeddings_settings::max_input_tokens, 1, 1 << 24, k); });
    add("debug.step_delay_s", [](auto k) { return number(&D::debug, &debug_settings::step_delay_s, 0.0, 60.0, k); });
    add("debug.fail_step", [](auto k) { return integer(&D::debug, &debug_settings::fail_step, 0, INT64_MAX, k); });
    add("debug.num_failed_steps",
        [](auto k) { return integer(&D::debug, &debug_settings::num_failed_steps, 1, 1 << 30, k); });
    add("debug.fail_warm_up", [](auto k) { return boolean(&D::debug, &debug_settings::fail_warm_up, k); });
    add("logging.level", [](auto k) {
      return text(&D::logging, &logging_settings::level, {"trace", "debug", "info", "warn", "error"}, k);
    });
    return t;
  }();
  return table;
}

}  // namespace

result<void> apply_key(deployment& d, const std::string& key, const toml::node& value) {
  const auto& table = specs();
  auto it = table.find(key);
  if (it == table.end()) {
    return make_error(errc::invalid_argument, "unknown config key '" + key + "' (known keys: see config/default.toml)");
  }
  return it->second.set(d, value);
}

std::vector<std::string> key_descriptions() {
  std::vector<std::string> keys;
  for (const auto& [k, spec] : specs()) keys.push_back(k + " (" + spec.expected + ")");
  return keys;
}

}  // namespace inflight::config
