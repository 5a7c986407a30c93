#include <catch2/catch.hpp>

#include "config/deployment_loader.hpp"

using namespace inflight;
using namespace inflight::config;

TEST_CASE("an empty document gives the defaults", "[config]") {
  auto d = parse_deployment("");
  REQUIRE(d.has_value());
  CHECK(d->server.port == 8000);
  CHECK(d->engine.block_size == 16);
  CHECK(d->scheduler.policy == "splitfuse");
  CHECK(d->engine.kv_memory_bytes == 256ll << 20);
}

TEST_CASE("every shipped deployment file loads", "[config]") {
  for (const char* name : {"default.toml", "cpu-small.toml", "gpu-8b.toml"}) {
    INFO(name);
    auto d = load_deployment(std::filesystem::path(INFLIGHT_SOURCE_DIR) / "config" / name);
    REQUIRE(d.has_value());
  }
  auto gpu = load_deployment(std::filesystem::path(INFLIGHT_SOURCE_DIR) / "config" / "gpu-8b.toml");
  CHECK(gpu->engine.backend == "cuda");
  CHECK(gpu->model.dummy.num_kv_heads == 8);
  CHECK_FALSE(gpu->model.dummy.tied_embeddings);
}

TEST_CASE("values are read into their settings", "[config]") {
  auto d = parse_deployment(R"(
[server]
port = 9001
request_timeout_s = 5
[engine]
kv_memory = "1.5GiB"
max_num_seqs = 8
[scheduler]
policy = "fcfs"
ttft_target_ms = 500
tpot_target_ms = 50.5
[scheduler.fcfs]
chunk = 32
name = "x"
)");
  REQUIRE(d.has_value());
  CHECK(d->server.port == 9001);
  CHECK(d->server.request_timeout_s == 5.0);
  CHECK(d->engine.kv_memory_bytes == std::int64_t(1.5 * 1073741824.0));
  CHECK(d->engine.max_num_seqs == 8);
  CHECK(d->scheduler.policy == "fcfs");
  CHECK(d->scheduler.policy_settings.at("fcfs").find("\"chunk\"") != std::string::npos);
  CHECK(d->scheduler.ttft_target_ms == 500.0);
  CHECK(d->scheduler.tpot_target_ms == 50.5);
  CHECK_FALSE(parse_deployment("[scheduler]\nttft_target_ms = -5\n").has_value());
}

TEST_CASE("errors name the key, the value and what was expected", "[config]") {
  auto unknown = parse_deployment("[engine]\nmax_num_seq = 4\n");
  REQUIRE_FALSE(unknown.has_value());
  CHECK_THAT(unknown.error().message, Catch::Contains("engine.max_num_seq"));

  auto wrong_type = parse_deployment("[engine]\nmax_num_seqs = \"many\"\n");
  REQUIRE_FALSE(wrong_type.has_value());
  CHECK_THAT(wrong_type.error().message, Catch::Contains("engine.max_num_seqs") && Catch::Contains("\"many\"") &&
                                             Catch::Contains("an integer"));

  auto out_of_range = parse_deployment("[server]\nport = 70000\n");
  REQUIRE_FALSE(out_of_range.has_value());
  CHECK_THAT(out_of_range.error().message, Catch::Contains("70000") && Catch::Contains("65535"));

  auto bad_choice = parse_deployment("[engine]\nbackend = \"tpu\"\n");
  REQUIRE_FALSE(bad_choice.has_value());
  CHECK_THAT(bad_choice.error().message, Catch::Contains("\"cpu\"") && Catch::Contains("\"cuda\""));

  auto syntax = parse_deployment("[engine\n", "bad.toml");
  REQUIRE_FALSE(syntax.has_value());
  CHECK_THAT(syntax.error().message, Catch::Contains("bad.toml:1"));

  auto heads = parse_deployment("[model.dummy]\nnum_heads = 6\nnum_kv_heads = 4\n");
  REQUIRE_FALSE(heads.has_value());
  CHECK_THAT(heads.error().message, Catch::Contains("num_kv_heads"));
}

TEST_CASE("command-line overrides (--set) set keys with typed values", "[config]") {
  deployment d;
  REQUIRE(apply_override(d, "engine.max_num_seqs=64").has_value());
  CHECK(d.engine.max_num_seqs == 64);
  REQUIRE(apply_override(d, "model.format=hf").has_value());
  CHECK(d.model.format == "hf");
  REQUIRE(apply_override(d, "model.format=gguf").has_value());
  CHECK(d.model.format == "gguf");
  CHECK_FALSE(apply_override(d, "model.format=ggml").has_value());
  REQUIRE(apply_override(d, "model.path=\"/tmp/a b.bin\"").has_value());
  CHECK(d.model.path == "/tmp/a b.bin");
  REQUIRE(apply_override(d, "engine.kv_memory=64MiB").has_value());
  CHECK(d.engine.kv_memory_bytes == 64ll << 20);
  CHECK_FALSE(apply_override(d, "engine.max_num_seqs=-3").has_value());
  // A float where an integer belongs: refused, not converted (2e40 does not fit an int64).
  for (const char* set : {"model.dummy.num_heads=2e40", "engine.max_num_seqs=1e300", "engine.kv_memory=4.5e30",
                          "engine.max_num_seqs=8.0"}) {
    INFO(set);
    auto r = apply_override(d, set);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("an integer") || Catch::Contains("a size"));
  }
  auto in_file = parse_deployment("[model.dummy]\nnum_heads = 2e40\n");
  REQUIRE_FALSE(in_file.has_value());
  CHECK_THAT(in_file.error().message, Catch::Contains("model.dummy.num_heads"));
  CHECK_FALSE(apply_override(d, "engine.nope=1").has_value());
  CHECK_FALSE(apply_override(d, "no_equals_sign").has_value());
}

TEST_CASE("sizes parse with binary and decimal units", "[config]") {
  CHECK(parse_bytes("1024").value() == 1024);
  CHECK(parse_bytes("2KiB").value() == 2048);
  CHECK(parse_bytes("1MB").value() == 1000000);
  CHECK(parse_bytes("0.5GiB").value() == 536870912);
  CHECK_FALSE(parse_bytes("12 parsecs").has_value());
  CHECK_FALSE(parse_bytes("-1GiB").has_value());
  CHECK_FALSE(parse_bytes("").has_value());
}

TEST_CASE("engine.enable_prefix_caching is on by default and takes a boolean", "[config][prefix]") {
  CHECK(parse_deployment("")->engine.enable_prefix_caching);
  auto off = parse_deployment("[engine]\nenable_prefix_caching = false\n");
  REQUIRE(off.has_value());
  CHECK_FALSE(off->engine.enable_prefix_caching);
  auto wrong = parse_deployment("[engine]\nenable_prefix_caching = 1\n");
  REQUIRE_FALSE(wrong.has_value());
  CHECK_THAT(wrong.error().message, Catch::Contains("engine.enable_prefix_caching") && Catch::Contains("a boolean"));
}

TEST_CASE("engine.pin_threads is off by default and takes a boolean", "[config]") {
  CHECK_FALSE(parse_deployment("")->engine.pin_threads);
  auto off = parse_deployment("[engine]\npin_threads = false\n");
  REQUIRE(off.has_value());
  CHECK_FALSE(off->engine.pin_threads);
  auto on = parse_deployment("[engine]\npin_threads = true\n");
  REQUIRE(on.has_value());
  CHECK(on->engine.pin_threads);
  auto wrong = parse_deployment("[engine]\npin_threads = \"yes\"\n");
  REQUIRE_FALSE(wrong.has_value());
  CHECK_THAT(wrong.error().message, Catch::Contains("engine.pin_threads") && Catch::Contains("a boolean"));
}

TEST_CASE("model.weight_dtype and engine.kv_dtype default to auto and take the listed types", "[config]") {
  auto d = parse_deployment("");
  REQUIRE(d.has_value());
  CHECK(d->model.weight_dtype == "auto");
  CHECK(d->engine.kv_dtype == "auto");
  auto set = parse_deployment("[model]\nweight_dtype = \"q4_k_m\"\n[engine]\nkv_dtype = \"bf16\"\n");
  REQUIRE(set.has_value());
  CHECK(set->model.weight_dtype == "q4_k_m");
  CHECK(set->engine.kv_dtype == "bf16");
  for (const char* low_bits : {"q2_k", "q3_k", "mxfp4"}) {
    auto k = parse_deployment(std::string("[model]\nweight_dtype = \"") + low_bits + "\"\n");
    REQUIRE(k.has_value());
    CHECK(k->model.weight_dtype == low_bits);
  }
  auto bad_weights = parse_deployment("[model]\nweight_dtype = \"iq2_xxs\"\n");
  REQUIRE_FALSE(bad_weights.has_value());
  CHECK_THAT(bad_weights.error().message, Catch::Contains("model.weight_dtype") && Catch::Contains("iq2_xxs"));
  CHECK(d->model.load_mode == "auto");
  auto read = parse_deployment("[model]\nload_mode = \"read\"\n");
  REQUIRE(read.has_value());
  CHECK(read->model.load_mode == "read");
  auto bad_load = parse_deployment("[model]\nload_mode = \"copy\"\n");
  REQUIRE_FALSE(bad_load.has_value());
  CHECK_THAT(bad_load.error().message, Catch::Contains("model.load_mode") && Catch::Contains("copy"));
  auto bad_kv = parse_deployment("[engine]\nkv_dtype = \"q8_0\"\n");
  REQUIRE_FALSE(bad_kv.has_value());
  CHECK_THAT(bad_kv.error().message, Catch::Contains("engine.kv_dtype"));
}

TEST_CASE("[embeddings] settings load, with their defaults and bounds", "[config][embeddings]") {
  auto defaults = parse_deployment("");
  REQUIRE(defaults.has_value());
  CHECK(defaults->embeddings.enabled);
  CHECK_FALSE(defaults->embeddings.pooling.has_value());    // "auto": the model's, else last
  CHECK_FALSE(defaults->embeddings.normalize.has_value());  // "auto": the model's, else true
  CHECK_FALSE(defaults->embeddings.matryoshka);
  CHECK(defaults->embeddings.max_inputs == 2048);
  CHECK(defaults->embeddings.max_input_tokens == 8192);
  auto d = parse_deployment(R"(
[embeddings]
enabled = false
pooling = "mean"
normalize = false
matryoshka = true
query_prefix = "Instruct: find\nQuery:"
append_eos = true
max_inputs = 4
max_input_tokens = 100
)");
  REQUIRE(d.has_value());
  CHECK_FALSE(d->embeddings.enabled);
  CHECK(d->embeddings.pooling == pooling_kind::mean);
  CHECK(d->embeddings.normalize == false);
  CHECK(d->embeddings.matryoshka);
  CHECK(d->embeddings.query_prefix == "Instruct: find\nQuery:");
  CHECK(d->embeddings.append_eos);
  CHECK(d->embeddings.max_inputs == 4);
  CHECK(d->embeddings.max_input_tokens == 100);
  auto bad = parse_deployment("[embeddings]\npooling = \"cls\"\n");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message, Catch::Contains("embeddings.pooling") && Catch::Contains("\"cls\""));
  CHECK_FALSE(parse_deployment("[embeddings]\nmax_inputs = 0\n").has_value());
  auto explicit_auto = parse_deployment("[embeddings]\npooling = \"first\"\nnormalize = true\n");
  REQUIRE(explicit_auto.has_value());
  CHECK(explicit_auto->embeddings.pooling == pooling_kind::first);
  CHECK(explicit_auto->embeddings.normalize == true);
  auto back_to_auto = parse_deployment("[embeddings]\npooling = \"auto\"\nnormalize = \"auto\"\n");
  REQUIRE(back_to_auto.has_value());
  CHECK_FALSE(back_to_auto->embeddings.pooling.has_value());
  CHECK_FALSE(back_to_auto->embeddings.normalize.has_value());
  auto bad_normalize = parse_deployment("[embeddings]\nnormalize = \"yes\"\n");
  REQUIRE_FALSE(bad_normalize.has_value());
  CHECK_THAT(bad_normalize.error().message, Catch::Contains("embeddings.normalize"));
}

TEST_CASE("[[models]]: each table a model with its own keys, aliases and engine", "[config]") {
  auto d = parse_deployment(R"(
[engine]
max_num_seqs = 32
[[models]]
name = "a"
path = "a.gguf"
weight_dtype = "q8_0"
aliases = ["x", "y"]
[[models]]
name = "b"
format = "dummy"
dummy.num_layers = 2
[models.engine]
max_num_seqs = 4
)");
  REQUIRE(d.has_value());
  REQUIRE(d->models.size() == 2);
  CHECK(d->models[0].name == "a");
  CHECK(d->models[0].model.path == "a.gguf");
  CHECK(d->models[0].model.weight_dtype == "q8_0");
  CHECK(d->models[0].aliases == std::vector<std::string>{"x", "y"});
  CHECK_FALSE(d->models[0].engine.has_value());  // the deployment's [engine], as --set leaves it
  CHECK(d->models[1].model.format == "dummy");
  CHECK(d->models[1].model.dummy.num_layers == 2);
  REQUIRE(d->models[1].engine.has_value());
  CHECK(d->models[1].engine->max_num_seqs == 4);
  const auto one = deployment_of(*d, d->models[1]);
  CHECK(one.model.name == "b");
  CHECK(one.engine.max_num_seqs == 4);
  CHECK(deployment_of(*d, d->models[0]).engine.max_num_seqs == 32);
  CHECK(d->model.path.empty());
}

TEST_CASE("[[models]]: a table without a name, a bad key, a name twice are errors", "[config]") {
  auto unnamed = parse_deployment("[[models]]\npath = \"a.gguf\"\n");
  REQUIRE_FALSE(unnamed);
  CHECK(unnamed.error().message.find("models[0] needs a name") != std::string::npos);
  auto bad_key = parse_deployment("[[models]]\nname = \"a\"\npaht = \"a.gguf\"\n");
  REQUIRE_FALSE(bad_key);
  CHECK(bad_key.error().message.find("models[0]") != std::string::npos);
  CHECK(bad_key.error().message.find("model.paht") != std::string::npos);
  auto twice = parse_deployment("[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\naliases = [\"a\"]\n");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("the name 'a' chooses two models") != std::string::npos);
  auto both = parse_deployment("[model]\npath = \"m.gguf\"\n[[models]]\nname = \"a\"\n");
  REQUIRE_FALSE(both);
  CHECK(both.error().message.find("model.path and [[models]]") != std::string::npos);
  auto not_tables = parse_deployment("models = [\"a\"]\n");
  REQUIRE_FALSE(not_tables);
}

TEST_CASE("durations parse as Ollama's keep_alive takes them, negative ones mean forever", "[config]") {
  CHECK(parse_duration("30").value() == 30.0);
  CHECK(parse_duration("1.5").value() == 1.5);
  CHECK(parse_duration("250ms").value() == Approx(0.25));
  CHECK(parse_duration("30s").value() == 30.0);
  CHECK(parse_duration("5m").value() == 300.0);
  CHECK(parse_duration("1h30m").value() == 5400.0);
  CHECK(parse_duration("0").value() == 0.0);
  CHECK(parse_duration("-1").value() == -1.0);
  CHECK(parse_duration("-5m").value() == -1.0);
  for (const char* bad : {"", "soon", "5 minutes", "5x", "m", "1h-5m", "3 4"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad).has_value());
  }
}

TEST_CASE("server.max_loaded_models, server.memory_budget and keep_alive (server-wide and per model) load",
          "[config]") {
  auto d = parse_deployment(R"(
[server]
max_loaded_models = 2
memory_budget = "8GiB"
keep_alive = "10m"
[[models]]
name = "a"
format = "dummy"
keep_alive = -1
[[models]]
name = "b"
format = "dummy"
keep_alive = 0
[[models]]
name = "c"
format = "dummy"
)");
  REQUIRE(d.has_value());
  CHECK(d->server.max_loaded_models == 2);
  CHECK(d->server.memory_budget_bytes == 8ll << 30);
  CHECK(d->server.keep_alive_s == 600.0);
  CHECK(d->models[0].keep_alive_s == -1.0);
  CHECK(d->models[1].keep_alive_s == 0.0);
  CHECK_FALSE(d->models[2].keep_alive_s.has_value());
  const auto defaults = parse_deployment("");
  CHECK(defaults->server.max_loaded_models == 0);
  CHECK(defaults->server.memory_budget_bytes == 0);
  CHECK(defaults->server.keep_alive_s < 0);  // never unloaded for being idle
  auto bad = parse_deployment("[[models]]\nname = \"a\"\nkeep_alive = \"soon\"\n");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("models[0].keep_alive"));
  auto bad_server = parse_deployment("[server]\nkeep_alive = true\n");
  REQUIRE_FALSE(bad_server);
  CHECK_THAT(bad_server.error().message, Catch::Contains("server.keep_alive"));
}

TEST_CASE("[lora] adapters: names and folders, refused beside [[models]]", "[config]") {
  auto d = parse_deployment("[lora]\nadapters = { sql = \"/adapters/sql\", chat = \"/adapters/chat\" }\n");
  REQUIRE(d.has_value());
  REQUIRE(d->lora.adapters.size() == 2);
  CHECK(d->lora.adapters[0] == std::pair<std::string, std::string>{"chat", "/adapters/chat"});  // by name
  CHECK(d->lora.adapters[1] == std::pair<std::string, std::string>{"sql", "/adapters/sql"});
  auto not_table = parse_deployment("[lora]\nadapters = [\"/a\"]\n");
  REQUIRE_FALSE(not_table);
  CHECK_THAT(not_table.error().message, Catch::Contains("lora.adapters must be a table"));
  auto not_path = parse_deployment("[lora]\nadapters = { sql = 3 }\n");
  REQUIRE_FALSE(not_path);
  CHECK_THAT(not_path.error().message, Catch::Contains("lora.adapters.sql must be a folder"));
  auto with_models = parse_deployment("[lora]\nadapters = { sql = \"/a\" }\n[[models]]\nname = \"m\"\nformat = \"dummy\"\n");
  REQUIRE_FALSE(with_models);
  CHECK_THAT(with_models.error().message, Catch::Contains("lora.adapters are for a server of one model"));
  CHECK(d->lora.max_loras_per_step == 0);  // the defaults: no limits, run-time loading on
  CHECK(d->lora.max_cpu_loras == 0);
  CHECK(d->lora.runtime_updates);
  auto limits = parse_deployment("[lora]\nmax_loras_per_step = 4\nmax_cpu_loras = 16\nruntime_updates = false\n");
  REQUIRE(limits.has_value());
  CHECK(limits->lora.max_loras_per_step == 4);
  CHECK(limits->lora.max_cpu_loras == 16);
  CHECK(!limits->lora.runtime_updates);
  // [[models]]: each entry its own adapters ([models.lora]), over [lora]'s limits.
  auto entries = parse_deployment(
      "[lora]\nmax_cpu_loras = 3\n"
      "[[models]]\nname = \"a\"\nformat = \"dummy\"\n[models.lora]\nadapters = { sql = \"/s\" }\nmax_loras_per_step = 2\n"
      "[[models]]\nname = \"b\"\nformat = \"dummy\"\n");
  REQUIRE(entries.has_value());
  const auto one_a = deployment_of(*entries, entries->models[0]);
  const auto one_b = deployment_of(*entries, entries->models[1]);
  REQUIRE(one_a.lora.adapters.size() == 1);
  CHECK(one_a.lora.adapters[0] == std::pair<std::string, std::string>{"sql", "/s"});
  CHECK(one_a.lora.max_loras_per_step == 2);
  CHECK(one_a.lora.max_cpu_loras == 3);
  CHECK(one_b.lora.adapters.empty());
  auto clash = parse_deployment("[[models]]\nname = \"a\"\nformat = \"dummy\"\n[models.lora]\nadapters = { b = \"/s\" }\n"
                                "[[models]]\nname = \"b\"\nformat = \"dummy\"\n");
  REQUIRE_FALSE(clash);
  CHECK_THAT(clash.error().message, Catch::Contains("'b' is both a model and a LoRA adapter"));
  auto bad_entry = parse_deployment("[[models]]\nname = \"a\"\nformat = \"dummy\"\n[models.lora]\nmax_cpu_loras = -2\n");
  REQUIRE_FALSE(bad_entry);
  CHECK_THAT(bad_entry.error().message, Catch::Contains("models[0]"));
  auto negative = parse_deployment("[lora]\nmax_cpu_loras = -1\n");
  REQUIRE_FALSE(negative);
  CHECK_THAT(negative.error().message, Catch::Contains("lora.max_cpu_loras"));
}
