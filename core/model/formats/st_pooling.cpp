#include "core/model/formats/st_pooling.hpp"

#include <nlohmann/json.hpp>

#include "core/base/json_depth.hpp"
#include "core/base/text_file.hpp"

namespace inflight {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view st_prefix = "sentence_transformers.models.";

result<json> try_parse_json(std::string_view text, const std::string& source) {
  if (json_nests_deeper_than(text)) {
    return make_error(errc::corrupt_file, source + ": nests deeper than " + std::to_string(max_json_depth) + " levels");
  }
  json root = json::parse(text.begin(), text.end(), nullptr, false);
  if (root.is_discarded()) return make_error(errc::corrupt_file, source + ": not valid JSON");
  return root;
}

/// The modes set to true, by their short names, in the order sentence-transformers concatenates them.
result<std::vector<std::string>> modes_of(const json& config, const std::string& source) {
  static constexpr std::pair<const char*, const char*> modes[] = {
      {"pooling_mode_cls_token", "cls"},          {"pooling_mode_mean_tokens", "mean"},
      {"pooling_mode_max_tokens", "max"},         {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"},
      {"pooling_mode_weightedmean_tokens", "weightedmean"}, {"pooling_mode_lasttoken", "lasttoken"}};
  std::vector<std::string> on;
  for (const auto& [key, name] : modes) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_boolean()) return make_error(errc::corrupt_file, source + ": " + key + " must be true or false");
    if (it->get<bool>()) on.emplace_back(name);
  }
  return on;
}

std::optional<pooling_kind> kind_of_mode(const std::string& mode) {
  if (mode == "cls") return pooling_kind::first;
  if (mode == "mean") return pooling_kind::mean;
  if (mode == "lasttoken") return pooling_kind::last;
  return std::nullopt;
}

/// The module's folder name, for messages ("1_Pooling").
std::string module_path(const json& module) {
  const auto it = module.find("path");
  return it != module.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string module_type(const json& module) {
  const auto it = module.find("type");
  return it != module.end() && it->is_string() ? it->get<std::string>() : std::string();
}

result<model_pooling> read_pooling_module(const fs::path& folder, const std::string& path) {
  const auto config_path = folder / path / "config.json";
  auto text = read_text_file(config_path);
  if (!text) return std::unexpected(text.error());
  return try_parse_st_pooling_config(*text, config_path.string());
}

/// Applies the modules after the transformer: Pooling (read), Normalize; anything else
/// changes the embedding in a way the engine does not compute.
result<model_pooling> read_modules(const fs::path& folder, const json& modules, const std::string& source) {
  if (!modules.is_array()) return make_error(errc::corrupt_file, source + ": must be a list of modules");
  model_pooling p;
  std::string not_computed;
  for (const auto& module : modules) {
    if (!module.is_object()) return make_error(errc::corrupt_file, source + ": every module must be an object");
    const std::string type = module_type(module);
    const std::string name = type.starts_with(st_prefix) ? type.substr(st_prefix.size()) : type;
    if (name == "Transformer") continue;
    if (name == "Pooling") {
      auto pooling = read_pooling_module(folder, module_path(module));
      if (!pooling) return std::unexpected(pooling.error());
      p.kind = pooling->kind;
      p.stated = pooling->stated;
      p.source = pooling->source;
    } else if (name == "Normalize") {
      p.normalize = true;
    } else if (not_computed.empty()) {
      not_computed = name.empty() ? "a module of no type" : name + " (" + module_path(module) + ")";
    }
  }
  if (p.is_stated() && !p.normalize) p.normalize = false;
  if (!not_computed.empty()) {
    p.stated = (p.stated.empty() ? std::string("none") : p.stated) + " followed by " + not_computed;
    p.source = source;
    p.kind.reset();
  }
  return p;
}

}  // namespace

result<model_pooling> try_parse_st_pooling_config(std::string_view json_text, const std::string& source) {
  auto config = try_parse_json(json_text, source);
  if (!config) return std::unexpected(config.error());
  if (!config->is_object()) return make_error(errc::corrupt_file, source + ": must be a JSON object");
  auto modes = modes_of(*config, source);
  if (!modes) return std::unexpected(modes.error());
  model_pooling p;
  p.source = source;
  for (const auto& mode : *modes) p.stated += (p.stated.empty() ? "" : "+") + mode;
  if (modes->empty()) p.stated = "none";
  if (modes->size() == 1) p.kind = kind_of_mode(modes->front());
  const auto include_prompt = config->find("include_prompt");
  if (p.kind == pooling_kind::mean && include_prompt != config->end() && include_prompt->is_boolean() &&
      !include_prompt->get<bool>()) {
    p.stated = "mean without the prompt (include_prompt = false)";
    p.kind.reset();
  }
  return p;
}

result<model_pooling> try_read_st_pooling(const fs::path& folder) {
  const auto modules_path = folder / "modules.json";
  if (!fs::exists(modules_path)) {
    if (!fs::exists(folder / "1_Pooling" / "config.json")) return model_pooling{};
    return read_pooling_module(folder, "1_Pooling");
  }
  auto text = read_text_file(modules_path);
  if (!text) return std::unexpected(text.error());
  auto modules = try_parse_json(*text, modules_path.string());
  if (!modules) return std::unexpected(modules.error());
  return read_modules(folder, *modules, modules_path.string());
}

}  // namespace inflight
