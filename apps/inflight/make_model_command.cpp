// `inflight make-model`: writes a random-weight model of a named or given shape, or
// converts a llama2.c checkpoint, as a llama2.c checkpoint, a Hugging Face folder or a
// GGUF file (matrices in any weight type, with a tokenizer).
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/inflight/commands.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model_writer.hpp"
#include "core/model/formats/hf_writer.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/model_family.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"
#include "dtypes/weight_dtype.hpp"

namespace inflight::app {
namespace {

struct make_model_options {
  std::string shape = "bench-20M";
  std::string family;  // empty: the shape's own (qwen3: the shape with per-head q/k norms)
  std::string from;  // an existing llama2.c checkpoint to convert
  std::string format = "llama2c";
  std::string dtype = "f32";
  std::string tokenizer;  // gguf: a llama2.c tokenizer.bin to embed
  std::string out;
  std::uint64_t seed = 0;
  int vocab_size = 0;
  int max_seq_len = 0;
  int num_layers = 0;          // 0: the shape's
  int experts = 0;             // a mixture family: experts per layer (0: the shape's or the default)
  int experts_per_token = 0;
  int expert_hidden = 0;
  int rope_dims = 0;           // rotated dimensions per head (0: all)
  std::string rope_scaling;    // linear:FACTOR | yarn:FACTOR:ORIGINAL_CONTEXT
  std::optional<int> sliding_window;  // keys a windowed layer reads (0: none); default the family's
  std::optional<int> window_period;   // a global layer every this many (0: all windowed)
  std::size_t split_max_tensors = 0;  // gguf: parts of at most this many tensors (0: one file)
};

/// LongRoPE factors for make-model: short ones rising gently to 2, long ones to 8 times
/// that (a shape of Phi-3's: the low-frequency pairs stretched most).
void draw_longrope(model_config& c, int original) {
  c.scaling = {};
  c.scaling.type = rope_scaling_type::longrope;
  c.scaling.original_max_position = original;
  const int pairs = c.rotary_dims() / 2;
  for (int i = 0; i < pairs; ++i) {
    const float t = float(i) / float(std::max(1, pairs - 1));
    c.scaling.short_factor.push_back(1.0f + t * t);
    c.scaling.long_factor.push_back(1.0f + 15.0f * t * t);
  }
}

/// --rope-scaling linear:F, yarn:F:ORIGINAL or longrope:ORIGINAL onto the config.
void apply_rope_scaling(const std::string& text, model_config& c) {
  if (text.empty()) return;
  if (text.starts_with("longrope:")) {
    int original = 0;
    try {
      original = std::stoi(text.substr(9));
    } catch (const std::exception&) {
    }
    if (original <= 0) fail("--rope-scaling '" + text + "': expected longrope:ORIGINAL_CONTEXT");
    return draw_longrope(c, original);
  }
  const auto first = text.find(':');
  const std::string kind = text.substr(0, first);
  const auto number = [&](std::size_t from, std::size_t to) {
    try {
      return std::stod(text.substr(from, to == std::string::npos ? std::string::npos : to - from));
    } catch (const std::exception&) {
      fail("--rope-scaling '" + text + "': expected linear:FACTOR or yarn:FACTOR:ORIGINAL_CONTEXT");
    }
  };
  if (first == std::string::npos || (kind != "linear" && kind != "yarn")) {
    fail("--rope-scaling '" + text + "': expected linear:FACTOR or yarn:FACTOR:ORIGINAL_CONTEXT");
  }
  const auto second = text.find(':', first + 1);
  c.scaling = {};
  c.scaling.type = kind == "linear" ? rope_scaling_type::linear : rope_scaling_type::yarn;
  c.scaling.factor = float(number(first + 1, second));
  if (!(c.scaling.factor > 0)) fail("--rope-scaling: the factor must be positive");
  if (c.scaling.type == rope_scaling_type::yarn) {
    if (second == std::string::npos) fail("--rope-scaling yarn needs its original context: yarn:FACTOR:ORIGINAL_CONTEXT");
    c.scaling.original_max_position = int(number(second + 1, std::string::npos));
    if (c.scaling.original_max_position <= 0) fail("--rope-scaling: the original context must be positive");
  }
}

/// The matrix types of --dtype for a GGUF file (a weight type or q4_k_m); none for f32.
std::optional<quant_recipe> recipe_for(const make_model_options& o) {
  if (o.format != "gguf" || o.dtype == "f32") return std::nullopt;
  auto recipe = try_parse_recipe(o.dtype);
  if (!recipe) fail("--dtype: " + recipe.error().message);
  return *recipe;
}

model_weights weights_for(const make_model_options& o) {
  const auto recipe = recipe_for(o);
  if (!o.from.empty()) {
    if (!o.family.empty()) fail("--family applies to random weights of a --shape, not to --from");
    auto w = load_llama2c(o.from);
    if (!w) fail(w.error().message);
    // A longer context for the same weights: positions past the trained length are
    // computed like the others (RoPE), just not what the model learned.
    if (o.max_seq_len > 0) w->config.max_seq_len = o.max_seq_len;
    if (recipe) {
      if (auto ok = try_quantize_weights(*w, *recipe); !ok) fail(ok.error().message);
    }
    return std::move(*w);
  }
  auto config = named_shape(o.shape);
  if (!config) {
    std::string names;
    for (const auto& n : shape_names()) names += " " + n;
    fail("unknown shape '" + o.shape + "'; known:" + names);
  }
  const std::string family_name = o.family.empty() ? std::string(family_of(*config).name) : o.family;
  if (o.experts > 0 || o.experts_per_token > 0 || o.expert_hidden > 0) {
    const auto* family = find_family(family_name);
    if (family == nullptr || !family->moe) fail("--experts, --experts-per-token and --expert-hidden need a mixture --family");
    if (o.experts > 0) config->moe.num_experts = o.experts;
    config->moe.experts_per_token = o.experts_per_token > 0 ? o.experts_per_token : std::max(config->moe.experts_per_token, 2);
    config->moe.expert_hidden_dim = o.expert_hidden > 0 ? o.expert_hidden : std::max(config->moe.expert_hidden_dim, config->hidden_dim / 4);
    if (config->moe.num_experts == 0) config->moe.num_experts = 8;
  }
  auto drawn = try_as_family(*config, family_name);
  if (!drawn) fail(drawn.error().message);
  config = *drawn;
  config->rope_dims = o.rope_dims == config->head_dim ? 0 : o.rope_dims;
  apply_rope_scaling(o.rope_scaling, *config);
  if (o.sliding_window) config->sliding_window = *o.sliding_window;
  if (o.window_period) config->window_period = *o.window_period;
  if (config->sliding_window == 0) config->rope_local_theta = 0.0f;
  if (o.vocab_size > 0) config->vocab_size = o.vocab_size;
  if (o.max_seq_len > 0) config->max_seq_len = o.max_seq_len;
  if (o.num_layers > 0) config->num_layers = o.num_layers;
  if (config->scaling.type == rope_scaling_type::longrope) {
    if (family_name != "phi3") fail("--rope-scaling longrope applies to --family phi3");
    config->scaling.factor = float(config->max_seq_len) / float(config->scaling.original_max_position);
  }
  auto w = make_dummy_weights(*config, o.seed, recipe ? &*recipe : nullptr);
  if (!w) fail(w.error().message);
  return std::move(*w);
}

/// The GGUF file's tokenizer: --tokenizer, else a tokenizer.bin next to --from, else
/// the byte-level vocabulary of dummy models.
gguf_vocab vocab_for(const make_model_options& o, const model_config& config) {
  std::string path = o.tokenizer;
  if (path.empty() && !o.from.empty()) {
    const auto dir = std::filesystem::path(o.from).parent_path();
    for (const char* name : {"tokenizer.bin", "tok512.bin"}) {
      if (std::filesystem::exists(dir / name)) path = (dir / name).string();
    }
  }
  if (path.empty()) {
    if (config.vocab_size < 259) fail("a byte-level vocabulary needs --vocab-size of at least 259; or give --tokenizer");
    return byte_gguf_vocab(config.vocab_size);
  }
  auto tok = llama2c_tokenizer::load(path, config.vocab_size);
  if (!tok) fail(tok.error().message);
  return gguf_vocab_of(**tok);
}

void run_make_model(const make_model_options& o) {
  if (o.format != "gguf" && o.dtype != "f32" && o.dtype != "f16" && o.dtype != "bf16") {
    fail("--dtype " + o.dtype + " is written only with --format gguf (hf takes f32 | bf16 | f16)");
  }
  if (!o.tokenizer.empty() && o.format != "gguf") fail("--tokenizer applies to --format gguf");
  if (o.split_max_tensors > 0 && o.format != "gguf") fail("--split-max-tensors applies to --format gguf");
  const auto w = weights_for(o);
  if (o.format == "llama2c") {
    if (auto ok = write_llama2c(w, o.out); !ok) fail(ok.error().message);
  } else if (o.format == "gguf") {
    gguf_model_options options;
    options.name = std::filesystem::path(o.out).stem().string();
    options.split_max_tensors = o.split_max_tensors;
    if (auto ok = try_write_gguf_model(w, vocab_for(o, w.config), o.out, options); !ok) fail(ok.error().message);
  } else {
    const auto dtype = o.dtype == "bf16" ? tensor_dtype::bf16 : o.dtype == "f16" ? tensor_dtype::f16 : tensor_dtype::f32;
    generation_ids ids;
    if (w.config.architecture == "llama2.c") ids = {{2}, 1};  // llama2.c tokenizers: BOS 1, EOS 2
    if (auto ok = write_hf_model_folder(w, o.out, dtype, ids); !ok) fail(ok.error().message);
  }
  std::cerr << "wrote " << o.out << (o.split_max_tensors > 0 ? " as a split file (its parts: -00001-of-...)" : "")
            << " (" << o.format << ", " << w.config.num_parameters() << " parameters)\n";
}

}  // namespace

void add_make_model_command(CLI::App& app) {
  auto o = std::make_shared<make_model_options>();
  auto* cmd = app.add_subcommand("make-model", "Write a random-weight (or converted) model for tests and benchmarks");
  cmd->add_option("--shape", o->shape, "bench-20M | bench-110M | llama-3.2-1b | llama-3.1-8b | qwen3-0.6b | llama-2-13b | qwen3-30b-a3b | gemma-3-1b")
      ->capture_default_str();
  cmd->add_option("--family", o->family,
                  "llama | qwen2 | qwen3 | mixtral | qwen2moe | qwen3moe | gemma | gemma2 | gemma3 | phi3 | gpt-oss (the shape drawn with that family's layers, default its own; "
                  "a mixture family without experts in the shape gets 8 of a quarter of its MLP width, 2 per token)")
      ->check(CLI::IsMember(family_names()));
  cmd->add_option("--experts", o->experts, "a mixture family: experts per layer")->check(CLI::Range(1, 4096));
  cmd->add_option("--experts-per-token", o->experts_per_token, "a mixture family: experts each token uses")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--expert-hidden", o->expert_hidden, "a mixture family: each expert's intermediate size")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--rope-dims", o->rope_dims, "rotated dimensions of each head (partial rotary; default all)")
      ->check(CLI::Range(2, 1 << 16));
  cmd->add_option("--rope-scaling", o->rope_scaling,
                  "linear:FACTOR | yarn:FACTOR:ORIGINAL_CONTEXT | longrope:ORIGINAL_CONTEXT (phi3: drawn factors)");
  cmd->add_option("--sliding-window", o->sliding_window,
                  "keys a windowed layer reads, itself included (0: none; default gemma2 4096, gemma3 1024, gpt-oss 128, others none)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--window-period", o->window_period,
                  "with a window: a global layer every this many, the last of each period (0: every layer windowed; "
                  "default gemma2 2, gemma3 6, gpt-oss 2, others 0)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--from", o->from, "convert this llama2.c checkpoint instead of drawing random weights")
      ->check(CLI::ExistingFile);
  cmd->add_option("--format", o->format, "llama2c (a .bin file) | hf (a folder) | gguf (a .gguf file)")
      ->check(CLI::IsMember({"llama2c", "hf", "gguf"}))
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype,
                  "matrix type: hf f32 | bf16 | f16; gguf any of " + weight_dtype_names() +
                      " | q4_k_m (rows that are not whole blocks fall back as llama-quantize does)")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o->tokenizer,
                  "gguf: the llama2.c tokenizer.bin to embed (default: one next to --from, else byte-level)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--split-max-tensors", o->split_max_tensors,
                  "gguf: write a split file of parts of at most this many tensors, named as llama.cpp's gguf-split "
                  "names them (OUT without .gguf, then -00001-of-0000N.gguf)");
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "override the shape's vocabulary size");
  cmd->add_option("--layers", o->num_layers, "override the shape's number of layers (a shorter model of its widths)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-seq-len", o->max_seq_len, "override the context length (of the shape, or of the --from checkpoint)");
  cmd->add_option("--out", o->out, "output file (llama2c, gguf) or folder (hf)")->required();
  cmd->callback([o] { run_make_model(*o); });
}

}  // namespace inflight::app
