#pragma once
/// A deployment: everything a TOML file under config/ describes. Plain structs with
/// the defaults of config/default.toml; config/ is the one place that reads TOML.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_settings.hpp"
#include "core/model/pooling.hpp"

namespace inflight {

struct server_settings {
  std::string host = "127.0.0.1";
  int port = 8000;
  int io_threads = 2;
  std::int64_t max_body_bytes = 1 << 20;  ///< larger bodies get 413
  std::int64_t max_header_bytes = 64 << 10;  ///< larger request headers get 431
  int max_choices = 128;                  ///< prompts x n of one request; more is a 400
  int max_waiting_requests = 256;         ///< requests not yet started; beyond this, new ones get 429
  std::int64_t max_waiting_tokens = 1 << 20;  ///< prompt tokens of those; beyond this, new ones get 429
  double max_queue_time_s = 300.0;        ///< a request not started after this fails (429 queue_timeout); 0 = none
  int retry_after_s = 1;                  ///< the Retry-After of a 429
  double request_timeout_s = 600.0;       ///< per-request deadline (0 = none)
  double idle_timeout_s = 60.0;           ///< keep-alive connections idle longer are closed
  double linger_s = 2.0;                  ///< after an error that closes the connection, read what the client still sends
  double shutdown_grace_s = 10.0;         ///< streams in flight get this long on SIGINT/SIGTERM
  int ws_max_queued_messages = 1024;      ///< per-connection WebSocket send queue bound
  double ws_handshake_timeout_s = 30.0;   ///< a WebSocket upgrade must complete within this
  std::int64_t max_stream_buffer_bytes = 256 << 10;  ///< SSE bytes queued for a slow reader before its stream pauses
  int responses_store_max = 1000;         ///< /v1/responses kept for previous_response_id and GET (0 = none); the oldest leave first
  double responses_store_ttl_s = 3600.0;  ///< a stored response is forgotten after this (0 = only when evicted)

  // The web UI (GET /) and its live feed of engine steps (GET /v1/engine/events).
  bool enable_ui = true;                  ///< false: neither is served (404)
  int events_max_subscribers = 4;         ///< concurrent feed readers; more get 503
  int events_queue_size = 256;            ///< events queued per reader; beyond, they merge (aggregate)
  int events_max_seqs = 256;              ///< sequences listed per event; beyond, only counted

  // Who may call, and over what (docs/deployment.md). No key configured = open.
  std::vector<std::string> api_keys;      ///< `Authorization: Bearer <key>` accepted with any of these
  std::string api_key_file;               ///< more keys, one per line (blank lines and '#' comments skipped)
  bool metrics_open = false;              ///< with keys: GET /metrics answers without one too
  std::string tls_cert_file;              ///< PEM certificate chain: HTTPS / WSS when set (with tls_key_file)
  std::string tls_key_file;               ///< PEM private key of tls_cert_file

  // Several models ([[models]]): which are loaded, within what (docs/deployment.md).
  int max_loaded_models = 0;              ///< at most this many engines at once (0 = no limit); the least recently used idle one leaves
  std::int64_t memory_budget_bytes = 0;   ///< weights + KV of the loaded models at most this (0 = no limit)
  double keep_alive_s = -1.0;             ///< an idle model unloads after this (0 = after each request, < 0 = never)
};

/// The engine port between a router and its engines ([cluster]; both sides read it).
struct cluster_settings {
  /// "host:port" the engine port of `--role engine` binds to (port 0 = any free port);
  /// "" = server.host:server.port. `--host` / `--port` override it.
  std::string bind;
  bool tls = false;                       ///< mutual TLS (CAF's OpenSSL module): both sides present certificates
  std::string cert_file;                  ///< this side's PEM certificate (chain)
  std::string key_file;                   ///< its PEM private key
  std::string ca_file;                    ///< the CA (PEM) that must have signed the other side's certificate
  double heartbeat_interval_s = 1.0;      ///< a heartbeat on every connection this often
  double connection_timeout_s = 5.0;      ///< a connection silent this long is lost
};

/// `--role router` ([router]; `--engines` and `--route-policy` override it).
struct router_settings {
  std::vector<std::string> engines;       ///< host:port of each `serve --role engine`
  std::string policy = "least_load";      ///< a routing policy in the plugin directory
  double request_timeout_s = 10.0;        ///< an engine's answer to a submit or health check
  double reconnect_interval_s = 1.0;      ///< how often an engine that is down is tried again
};

struct engine_settings {
  std::string backend = "cpu";     ///< cpu | cuda
  int threads = 0;                 ///< cpu: compute threads (0 = one per physical core)
  bool pin_threads = false;        ///< cpu: pin the compute threads to cores (a dedicated machine)
  int block_size = 16;             ///< tokens per KV block
  std::int64_t kv_memory_bytes = 256ll << 20;  ///< KV budget when kv_blocks = 0
  std::string kv_dtype = "auto";   ///< cpu: f32 | f16 | bf16 KV cache elements ("auto" = f32; cuda: model.dtype)
  int kv_blocks = 0;               ///< explicit block count (overrides kv_memory)
  double gpu_memory_utilization = 0.9;
  /// cuda: decode attention kernel, grouped (one block per kv head reads each K/V row
  /// once for its query heads) | mma (tensor cores; head_dim 64/96/128, groups up to 16,
  /// else grouped; its Hugging Face comparison has not run yet) | per_head (one block per
  /// query head)
  std::string cuda_decode_attention = "grouped";
  /// cuda: prefill / mixed-step attention kernel, mma (tensor cores; head_dim 64/96/128,
  /// else tiled) | tiled (CUDA cores)
  std::string cuda_prefill_attention = "mma";
  /// cuda: where greedy rows under a grammar mask are sampled: "device" (their bitmask
  /// uploaded, an arg-max among the allowed tokens) or "host" (their logits copied to
  /// core's sampler).
  std::string cuda_grammar_mask = "device";
  /// cuda: how weight matrices lie on the GPU: "expand" (every matrix in model.dtype),
  /// "file" (q8_0, q4_0, q4_k and q6_k matrices in their GGUF blocks, no expanded copy;
  /// other types expanded) or "fp8" (the layers' matrices in E4M3, one scale each; sm_89+).
  /// "file" and "fp8" have not run on a GPU yet (docs/gpu.md).
  std::string cuda_weights = "expand";
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  bool enable_prefix_caching = true;  ///< reuse the K/V of cached prompt prefixes
  int unhealthy_after_failed_steps = 3;  ///< this many failed backend steps in a row: /health is 503
};

struct scheduler_settings {
  std::string policy = "splitfuse";
  std::string plugin_dir;          ///< empty = $INFLIGHT_PLUGIN_DIR, else next to the binary (core/engine/sched/plugin_dir.hpp)
  /// [scheduler.<policy>] tables as JSON objects, by policy name.
  std::map<std::string, std::string> policy_settings;
  // Latency targets of requests that set none (ttft_target_ms / tpot_target_ms in the
  // request); what an SLO-aware policy such as `slo` plans for. 0 = none.
  double ttft_target_ms = 0.0;
  double tpot_target_ms = 0.0;
};

/// Speculative decoding ([speculative]): a drafter proposes tokens, the step checks
/// them in the same pass (core/engine/spec/, docs/speculative.md). Requests may choose
/// their own with the `speculative` request field.
struct speculative_settings {
  std::string method = "off";      ///< off | ngram (prompt lookup) | suffix (and recent finished requests) | draft
  int num_speculative_tokens = 4;  ///< the longest draft checked in one step
  int prompt_lookup_min = 1;       ///< ngram/suffix: the shortest suffix looked up
  int prompt_lookup_max = 3;       ///< ngram/suffix: the longest, tried first
  /// One more row's cost relative to the step's fixed cost (reading the weights): the
  /// budget rule drafts only where a drafted token's chance of being kept beats it.
  double row_cost = 0.25;
  bool learn_row_cost = true;      ///< replace row_cost by what the steps' own times say
  /// method "draft": a smaller model of the same vocabulary (a path the loader reads),
  /// greedy on the CPU (the executor runs it), its K/V in draft_kv_memory bytes: the
  /// KV allocator's draft space.
  std::string draft_model;
  std::int64_t draft_kv_memory_bytes = 64ll << 20;
};

/// Whether /v1/rerank and /v1/score are served ([rerank] enabled).
enum class rerank_mode {
  automatic,  ///< "auto": served when the yes/no words are single tokens, else the routes say why
  required,   ///< true: start-up fails unless they are
  off,        ///< false: the routes answer that reranking is disabled
};

/// Relevance scoring with a causal LM: the prompt asks for a yes/no judgement and the
/// score is P(yes) = sigmoid(logit(yes) - logit(no)) at the last prompt position.
struct rerank_settings {
  rerank_mode mode = rerank_mode::automatic;
  /// The prompt, with {instruction}, {query} and {document} (once, after the query so
  /// that instruction + query are a prefix shared by every document). "" = the built-in
  /// Qwen3-Reranker format (core/api/reranker.hpp).
  std::string prompt_template;
  std::string instruction = "Given a web search query, retrieve relevant passages that answer the query";
  std::string yes_word = "yes";    ///< must be one token
  std::string no_word = "no";      ///< must be one token
  int max_documents = 1000;        ///< documents (or text pairs) in one request
};

/// /v1/embeddings (and the WebSocket "embed" message): one prefill-only forward pass
/// per input, its final hidden states pooled (core/model/pooling.hpp).
struct embeddings_settings {
  bool enabled = true;             ///< false: the route answers 400 embeddings_unavailable
  /// last (decoder embedders), mean, first (CLS-style); none = "auto": what the model
  /// states, else last (try_resolve_embedding in core/model/pooling.hpp).
  std::optional<pooling_kind> pooling;
  /// L2-normalise every embedding; none = "auto": as the model's modules say, else true.
  std::optional<bool> normalize;
  /// The model was trained for truncated embeddings (Matryoshka): requests may ask for
  /// `dimensions`. Off: `dimensions` is a 400.
  bool matryoshka = false;
  /// Instruction prefixed to text inputs of requests with "input_type": "query"
  /// (Qwen3-Embedding: "Instruct: <task>\nQuery:"). "" = none.
  std::string query_prefix;
  bool append_eos = false;         ///< end every text input with the tokenizer's EOS token
  int max_inputs = 2048;           ///< inputs in one request (each is queued as one request)
  int max_input_tokens = 8192;     ///< tokens of one input (and never more than the context)
};

/// For tests and fault drills; the defaults change nothing (backends/debug_backend.hpp).
struct debug_settings {
  double step_delay_s = 0.0;   ///< sleep before every backend step
  std::int64_t fail_step = 0;  ///< the backend fails its step number N (from 1; 0 = never)
  int num_failed_steps = 1;    ///< ... and the steps after it: this many fail in all
  bool fail_warm_up = false;   ///< the backend fails its warm-up (engine start fails)
};

struct logging_settings {
  std::string level = "info";      ///< trace | debug | info | warn | error
};

/// LoRA adapters over the model ([lora] adapters = { name = "folder" }, `serve --lora
/// NAME=PATH`): a request's `model` field names one (docs/models.md).
struct lora_settings {
  std::vector<std::pair<std::string, std::string>> adapters;  ///< name -> PEFT adapter folder, in order
  /// Most distinct adapters in one step (0 = no limit): rows of others wait a step.
  int max_loras_per_step = 0;
  /// Most adapters held in memory while idle (0 = no limit): past it the least recently
  /// used idle one is dropped and read again from its path when a request names it.
  int max_cpu_loras = 0;
  /// POST /v1/load_lora_adapter and /v1/unload_lora_adapter (API key when keys are on).
  bool runtime_updates = true;
};

/// One model of a server that serves several ([[models]] in TOML, `serve --model
/// NAME=SPEC`): a request chooses it by its `model` field.
struct model_entry {
  std::string name;                       ///< the `model` value that chooses it (model.name)
  std::vector<std::string> aliases;       ///< other values that choose it
  model_settings model;                   ///< its [model] keys (from the defaults, not [model])
  std::optional<engine_settings> engine;  ///< its own [engine] ([models.engine]); none = the deployment's
  std::optional<double> keep_alive_s;     ///< its own server.keep_alive
  std::optional<lora_settings> lora;      ///< its own [lora] ([models.lora]): adapters over this model
};

struct deployment {
  /// Several models in one server; empty = the one of [model].
  std::vector<model_entry> models;
  server_settings server;
  cluster_settings cluster;
  router_settings router;
  model_settings model;
  engine_settings engine;
  scheduler_settings scheduler;
  speculative_settings speculative;
  rerank_settings rerank;
  embeddings_settings embeddings;
  lora_settings lora;
  logging_settings logging;
  debug_settings debug;
};

/// The deployment one [[models]] entry is served with: its model and name, its own
/// [engine] and [lora] when it has them, every other section the deployment's.
inline deployment deployment_of(const deployment& d, const model_entry& e) {
  deployment one = d;
  one.models.clear();
  one.model = e.model;
  one.model.name = e.name;
  if (e.engine) one.engine = *e.engine;
  one.lora.adapters.clear();  // [lora]'s limits apply to every model; adapters only to their own
  if (e.lora) one.lora = *e.lora;
  return one;
}

}  // namespace inflight
