#include "core/model/model_loader.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>

#include "core/model/convert.hpp"
#include "core/model/formats/dummy_model.hpp"
#include "core/model/formats/gguf_model.hpp"
#include "core/model/formats/hf_model.hpp"
#include "core/model/formats/llama2c.hpp"
#include "core/model/formats/shapes.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"
#include "core/model/tokenizer/gguf_vocab.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"
#include "core/model/tokenizer/llama2c_tokenizer.hpp"

namespace inflight {
namespace fs = std::filesystem;

model_config dummy_model_config(const dummy_shape& s) {
  model_config c;
  c.architecture = "LlamaForCausalLM";
  c.dim = s.hidden_size;
  c.hidden_dim = s.intermediate_size;
  c.num_layers = s.num_layers;
  c.num_heads = s.num_heads;
  c.num_kv_heads = s.num_kv_heads;
  c.head_dim = s.head_dim > 0 ? s.head_dim : s.hidden_size / s.num_heads;
  c.vocab_size = s.vocab_size;
  c.max_seq_len = s.max_position;
  c.rope_theta = s.rope_theta;
  c.rope = rope_style::half;
  c.tied_embeddings = s.tied_embeddings;
  if (s.num_experts > 0) {
    c.moe.num_experts = s.num_experts;
    c.moe.experts_per_token = s.experts_per_token > 0 ? s.experts_per_token : std::min(2, s.num_experts);
    c.moe.expert_hidden_dim = s.expert_intermediate_size > 0 ? s.expert_intermediate_size : std::max(1, s.intermediate_size / 4);
  }
  // The config loader admits only known families; an unknown one keeps the Llama shape.
  return try_as_family(c, s.family).value_or(c);
}

namespace {

/// True for a file that starts with GGUF's magic.
bool has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

}  // namespace

std::string resolve_format(const model_settings& settings) {
  if (settings.format != "auto") return settings.format;
  if (settings.path.empty()) return "dummy";
  if (fs::is_directory(settings.path)) return "hf";
  return fs::path(settings.path).extension() == ".gguf" || has_gguf_magic(settings.path) ? "gguf" : "llama2c";
}

namespace {

std::string stem_name(const std::string& path) {
  auto p = fs::path(path);
  if (p.has_filename() && p.filename() != ".") return fs::is_directory(p) ? p.filename().string() : p.stem().string();
  return p.parent_path().filename().string();
}

result<loaded_model> load_llama2c_model(const model_settings& s) {
  auto w = load_llama2c(s.path);
  if (!w) return std::unexpected(w.error());
  std::string tok_path = s.tokenizer;
  if (tok_path.empty()) {
    const auto dir = fs::path(s.path).parent_path();
    for (const char* name : {"tokenizer.bin", "tok512.bin"}) {
      if (fs::exists(dir / name)) tok_path = (dir / name).string();
    }
  }
  if (tok_path.empty()) {
    return make_error(errc::not_found, s.path + ": no tokenizer.bin next to the checkpoint; set model.tokenizer");
  }
  auto tok = llama2c_tokenizer::load(tok_path, w->config.vocab_size);
  if (!tok) return std::unexpected(tok.error());
  loaded_model m;
  m.format = "llama2c";
  m.description = "llama2.c checkpoint " + s.path;
  // llama2.c models emit BOS between stories: it ends a generation like EOS.
  m.eos_ids = {llama2c_tokenizer::eos_token, llama2c_tokenizer::bos_token};
  m.tok = std::move(*tok);
  m.weights = std::make_shared<const model_weights>(std::move(*w));
  return m;
}

/// A tokenizer named by path: llama2.c tokenizer.bin, tokenizer.json, or a folder
/// holding one. Its vocabulary must fit the model's.
result<std::shared_ptr<const tokenizer>> load_tokenizer_path(const fs::path& path, int vocab_size) {
  result<std::shared_ptr<const tokenizer>> tok = make_error(errc::internal, "");
  if (path.extension() == ".bin") {
    auto t = llama2c_tokenizer::load(path);
    if (!t) return std::unexpected(t.error());
    tok = std::shared_ptr<const tokenizer>(std::move(*t));
  } else {
    auto t = fs::is_directory(path) ? hf_tokenizer::try_load(path) : hf_tokenizer::try_load_files(path);
    if (!t) return std::unexpected(t.error());
    tok = std::shared_ptr<const tokenizer>(std::move(*t));
  }
  if ((*tok)->vocab_size() > vocab_size) {
    return make_error(errc::invalid_argument, path.string() + ": the tokenizer has " +
                                                  std::to_string((*tok)->vocab_size()) +
                                                  " tokens but the model's vocab_size is " + std::to_string(vocab_size));
  }
  return tok;
}

/// The tokenizer of a model folder: model.tokenizer, else the folder's tokenizer.json.
result<std::shared_ptr<const tokenizer>> load_folder_tokenizer(const model_settings& s, int vocab_size,
                                                               loaded_model& m) {
  if (!s.tokenizer.empty() && !(fs::is_directory(s.tokenizer) && fs::exists(fs::path(s.tokenizer) / "tokenizer.json"))) {
    return load_tokenizer_path(s.tokenizer, vocab_size);
  }
  const fs::path dir = s.tokenizer.empty() ? fs::path(s.path) : fs::path(s.tokenizer);
  if (!fs::exists(dir / "tokenizer.json")) {
    return make_error(errc::not_found, s.path + ": no tokenizer.json in the model folder; set model.tokenizer");
  }
  auto tok = hf_tokenizer::try_load(dir);
  if (!tok) return std::unexpected(tok.error());
  m.bos_text = (*tok)->bos_token();
  m.eos_text = (*tok)->eos_token();
  if (s.chat_template.empty() && !(*tok)->chat_template().empty()) {
    auto chat = chat_template::try_from_model((*tok)->chat_template(), nullptr);
    if (!chat) return std::unexpected(chat.error());
    m.chat = std::move(*chat);
  }
  return std::shared_ptr<const tokenizer>(std::move(*tok));
}

result<loaded_model> load_hf(const model_settings& s, file_load load) {
  auto hf = try_load_hf_model(s.path, load);
  if (!hf) return std::unexpected(hf.error());
  loaded_model m;
  m.format = "hf";
  m.description = "Hugging Face model folder " + s.path;
  auto tok = load_folder_tokenizer(s, hf->weights.config.vocab_size, m);
  if (!tok) return std::unexpected(tok.error());
  m.tok = std::move(*tok);
  m.eos_ids = !hf->eos_ids.empty() ? hf->eos_ids : m.tok->eos_ids();
  m.pooling = std::move(hf->pooling);
  m.weights = std::make_shared<const model_weights>(std::move(hf->weights));
  return m;
}

/// A GGUF file: weights, tokenizer and chat template from the file (model.tokenizer
/// replaces its tokenizer).
result<loaded_model> load_gguf(const model_settings& s, file_load load) {
  auto g = try_load_gguf_model(s.path, load);
  if (!g) return std::unexpected(g.error());
  loaded_model m;
  m.format = "gguf";
  std::string types;
  for (auto dtype : weight_dtypes_of(g->weights)) {
    if (!types.empty()) types += '/';
    types += to_string(dtype);
  }
  m.description = "GGUF file " + s.path + " (" + g->architecture + ", " + types + ")";
  if (!s.tokenizer.empty()) {
    auto tok = load_tokenizer_path(s.tokenizer, g->weights.config.vocab_size);
    if (!tok) return std::unexpected(tok.error());
    m.tok = std::move(*tok);
    m.eos_ids = m.tok->eos_ids();
  } else {
    m.tok = std::move(g->tok);
    m.eos_ids = !g->vocab.end_ids().empty() ? g->vocab.end_ids() : m.tok->eos_ids();
    m.bos_text = g->vocab.token_text(g->vocab.bos_id);
    m.eos_text = g->vocab.token_text(g->vocab.eos_id);
  }
  if (s.chat_template.empty() && !g->vocab.chat_template.empty()) {
    auto chat = chat_template::try_from_model(g->vocab.chat_template, nullptr);
    if (!chat) return std::unexpected(chat.error());
    m.chat = std::move(*chat);
  }
  m.pooling = std::move(g->pooling);
  m.weights = std::make_shared<const model_weights>(std::move(g->weights));
  return m;
}

result<loaded_model> load_dummy(const model_settings& s) {
  model_config c = dummy_model_config(s.dummy);
  if (!s.config_json.empty()) {
    auto parsed = try_load_hf_config(s.config_json);
    if (!parsed) return std::unexpected(parsed.error());
    c = *parsed;
  }
  loaded_model m;
  m.format = "dummy";
  if (!s.tokenizer.empty()) {
    auto tok = load_tokenizer_path(s.tokenizer, c.vocab_size);
    if (!tok) return std::unexpected(tok.error());
    m.tok = std::move(*tok);
  } else if (c.vocab_size < byte_tokenizer::min_vocab_size) {
    return make_error(errc::invalid_argument, "dummy model: vocab_size must be at least 259 for the byte tokenizer");
  } else {
    m.tok = std::make_shared<byte_tokenizer>(c.vocab_size);
  }
  // Drawn straight into model.weight_dtype, a matrix at a time (an 8B shape at q4_k_m
  // never holds its f32 whole); load_model's conversion then finds nothing to do.
  std::optional<quant_recipe> recipe;
  if (s.weight_dtype != "auto") {
    auto r = try_parse_recipe(s.weight_dtype);
    if (!r) return make_error(errc::invalid_argument, "model.weight_dtype: " + r.error().message);
    recipe = *r;
  }
  auto w = make_dummy_weights(c, s.dummy.seed, recipe ? &*recipe : nullptr);
  if (!w) return std::unexpected(w.error());
  m.description = "DUMMY random weights (seed " + std::to_string(s.dummy.seed) + ") with " +
                  (s.tokenizer.empty() ? std::string("a byte-level tokenizer") : "tokenizer " + s.tokenizer) +
                  ": output is noise; set model.path to serve a real model";
  m.eos_ids = m.tok->eos_ids();
  m.weights = std::make_shared<const model_weights>(std::move(*w));
  return m;
}

}  // namespace

result<std::shared_ptr<const tokenizer>> try_load_tokenizer(const std::string& path) {
  if (fs::path(path).extension() == ".gguf" || (fs::is_regular_file(path) && has_gguf_magic(path))) {
    auto file = gguf_file::try_open(path);
    if (!file) return std::unexpected(file.error());
    auto vocab = try_read_gguf_vocab(*file);
    if (!vocab) return std::unexpected(vocab.error());
    return try_make_gguf_tokenizer(*vocab);
  }
  if (!fs::exists(path)) return make_error(errc::not_found, path + ": no such file or folder");
  return load_tokenizer_path(path, std::numeric_limits<int>::max());
}

namespace {

/// model.weight_dtype: the matrices converted as the recipe says ("auto" keeps the file's).
result<void> try_convert_weights(loaded_model& m, const std::string& weight_dtype) {
  if (weight_dtype == "auto") return {};
  auto recipe = try_parse_recipe(weight_dtype);
  if (!recipe) return make_error(errc::invalid_argument, "model.weight_dtype: " + recipe.error().message);
  // The loader made the weights and nothing else holds them yet: convert in place, so
  // each matrix's old storage is freed as soon as its new one exists.
  auto weights = std::const_pointer_cast<model_weights>(m.weights);
  if (auto ok = try_quantize_weights(*weights, *recipe); !ok) return ok;
  m.description += ", matrices as " + to_string(*recipe);
  return {};
}

/// Bytes of the weight files at `path`: the file (a split GGUF's first part: every part
/// beside it, NAME-0000K-of-0000N.gguf), or a folder's *.safetensors.
std::uintmax_t weight_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const auto size = fs::file_size(path, ec);
    if (ec) return 0;
    static const std::regex first_part(R"((.*)-00001-of-(\d{5})\.gguf)");
    std::smatch m;
    if (!std::regex_match(path, m, first_part)) return size;
    std::uintmax_t total = size;
    for (int k = 2; k <= std::stoi(m[2].str()); ++k) {
      char tail[40];
      std::snprintf(tail, sizeof tail, "-%05d-of-%s.gguf", k, m[2].str().c_str());
      const auto part = fs::file_size(m[1].str() + tail, ec);
      if (!ec) total += part;
    }
    return total;
  }
  std::uintmax_t total = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".safetensors") total += entry.file_size(ec);
  }
  return total;
}

}  // namespace

file_load resolve_load_mode(const model_settings& settings, std::string_view backend, std::uint64_t available_bytes) {
  if (settings.load_mode == "read") return file_load::read;
  if (settings.load_mode == "mmap" || backend != "cpu" || available_bytes == 0) return file_load::map;
  return weight_file_bytes(settings.path) <= available_bytes / 4 * 3 ? file_load::read : file_load::map;
}

result<loaded_model> load_model(const model_settings& settings, std::string_view backend) {
  const std::string format = resolve_format(settings);
  const file_load load = resolve_load_mode(settings, backend, available_memory_bytes());
  result<loaded_model> m = make_error(errc::invalid_argument, "unknown model.format '" + format + "'");
  if (format == "llama2c") m = load_llama2c_model(settings);
  if (format == "hf") m = load_hf(settings, load);
  if (format == "gguf") m = load_gguf(settings, load);
  if (format == "dummy") m = load_dummy(settings);
  if (!m) return m;
  if (format == "hf" || format == "gguf") m->description += load == file_load::read ? ", read into memory" : ", mapped";
  if (!settings.chat_template.empty()) {
    auto chat = chat_template::try_from_name(settings.chat_template);
    if (!chat) return std::unexpected(chat.error());
    m->chat = std::move(*chat);
  }
  if (auto ok = try_convert_weights(*m, settings.weight_dtype); !ok) return std::unexpected(ok.error());
  const int trained = m->weights->config.max_seq_len;
  m->max_context = settings.max_context > 0 ? std::min(settings.max_context, trained) : trained;
  if (const auto& scaling = m->weights->config.scaling; scaling.type == rope_scaling_type::longrope) {
    // LongRoPE's factors for the served context, as llama.cpp picks them: the long ones
    // past the original context (positions below it then rotate as the long factors say).
    const bool use_long = m->max_context > scaling.original_max_position;
    if (use_long != scaling.use_long_factor) {
      auto weights = std::make_shared<model_weights>(*m->weights);
      weights->config.scaling.use_long_factor = use_long;
      m->weights = std::move(weights);
    }
  }
  const auto& c = m->weights->config;
  m->name = !settings.name.empty() ? settings.name : format == "dummy" ? "dummy" : stem_name(settings.path);
  m->description += " (" + std::to_string(c.num_layers) + " layers, dim " + std::to_string(c.dim) + ", " +
                    std::to_string(c.num_parameters() / 1000) + "K parameters)";
  return m;
}

}  // namespace inflight
