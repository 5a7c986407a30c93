#include "hub/hub_select.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <cstdio>
#include <optional>
#include <regex>

namespace inflight::hub {

namespace {

bool ends_with_ci(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), s.end() - std::ptrdiff_t(suffix.size()),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b)); });
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// A GGUF model file (not a vision projector, which llama.cpp ships beside the model).
bool is_model_gguf(const std::string& path) {
  return ends_with_ci(path, ".gguf") && upper(base_name(path)).find("MMPROJ") == std::string::npos;
}

/// "NAME-00001-of-00003.gguf": the parts of one split GGUF file share NAME and the count.
struct split_part {
  std::string stem;  ///< NAME, with the folder
  int index = 0;
  int count = 0;
};

std::optional<split_part> split_part_of(const std::string& path) {
  static const std::regex part(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(path, m, part)) return std::nullopt;
  return split_part{m[1].str(), std::stoi(m[2].str()), std::stoi(m[3].str())};
}

/// Every part of the split file `path` belongs to (just `path` when it is whole), or an
/// error naming the first part the repository lacks.
result<std::vector<std::string>> parts_of(const std::string& path, std::span<const std::string> repo_files) {
  const auto p = split_part_of(path);
  if (!p) return std::vector<std::string>{path};
  std::vector<std::string> parts;
  for (int i = 1; i <= p->count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", i, p->count);
    const auto want = upper(p->stem + suffix);
    auto it = std::find_if(repo_files.begin(), repo_files.end(), [&](const std::string& f) { return upper(f) == want; });
    if (it == repo_files.end()) return make_error(errc::not_found, "the split GGUF file lacks its part " + p->stem + suffix);
    parts.push_back(*it);
  }
  return parts;
}

/// Whether `tag` (Q4_K_M) stands in `path` as a whole word: after a separator (- _ . /)
/// and before one of - . / or the end.
bool has_tag(const std::string& path, const std::string& tag) {
  const auto p = upper(path), t = upper(tag);
  for (auto pos = p.find(t); pos != std::string::npos; pos = p.find(t, pos + 1)) {
    const bool starts = pos == 0 || std::string_view("-_./").find(p[pos - 1]) != std::string_view::npos;
    const auto end = pos + t.size();
    const bool ends = end == p.size() || std::string_view("-./").find(p[end]) != std::string_view::npos;
    if (starts && ends) return true;
  }
  return false;
}

std::vector<std::string> model_ggufs(std::span<const std::string> repo_files) {
  std::vector<std::string> out;
  for (const auto& f : repo_files) {
    if (!is_model_gguf(f)) continue;
    const auto part = split_part_of(f);
    if (!part || part->index == 1) out.push_back(f);  // a split file is listed by its first part
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;  // the plainest name first
  });
  return out;
}

std::string listing(const std::vector<std::string>& files) {
  std::string s;
  for (std::size_t i = 0; i < files.size() && i < 24; ++i) s += (i ? ", " : "") + files[i];
  if (files.size() > 24) s += ", ... (" + std::to_string(files.size()) + " in all)";
  return s;
}

result<hub_selection> select_gguf(const std::string& first, std::span<const std::string> repo_files) {
  auto parts = parts_of(first, repo_files);
  if (!parts) return std::unexpected(parts.error());
  hub_selection s;
  s.files = std::move(*parts);
  s.model_file = s.files.front();
  std::sort(s.files.begin(), s.files.end());
  return s;
}

result<hub_selection> select_by_tag(const hub_name& name, const std::string& tag, std::span<const std::string> repo_files) {
  const auto ggufs = model_ggufs(repo_files);
  for (const auto& f : ggufs)
    if (has_tag(f, tag)) return select_gguf(f, repo_files);
  if (ggufs.empty()) return make_error(errc::not_found, name.repo + " has no GGUF file (a quantization such as :" + tag + " names one)");
  return make_error(errc::not_found, name.repo + " has no GGUF file of quantization " + tag + "; it has " + listing(ggufs));
}

}  // namespace

bool is_folder_file(const std::string& file) {
  static const std::vector<std::string> heavy_folders = {"original/", "onnx/", "openvino/", "coreml/", "tflite/", "flax/"};
  for (const auto& h : heavy_folders)
    if (file.starts_with(h)) return false;
  if (file.find('/') != std::string::npos) return ends_with_ci(file, ".json");  // sentence-transformers' pooling files
  for (const char* ext : {".json", ".safetensors", ".model", ".txt", ".jinja", ".tiktoken"})
    if (ends_with_ci(file, ext)) return true;
  return false;
}

result<hub_selection> try_select_files(const hub_name& name, std::span<const std::string> repo_files) {
  if (!name.file.empty()) {
    if (std::find(repo_files.begin(), repo_files.end(), name.file) == repo_files.end())
      return make_error(errc::not_found, name.repo + " has no file " + name.file +
                                             (model_ggufs(repo_files).empty() ? "" : "; its GGUF files: " + listing(model_ggufs(repo_files))));
    if (ends_with_ci(name.file, ".gguf")) {
      const auto part = split_part_of(name.file);
      if (!part) return select_gguf(name.file, repo_files);
      char first[32];
      std::snprintf(first, sizeof first, "-%05d-of-%05d.gguf", 1, part->count);
      return select_gguf(part->stem + first, repo_files);
    }
    return hub_selection{{name.file}, name.file};
  }
  if (!name.tag.empty()) return select_by_tag(name, name.tag, repo_files);
  const bool has_config = std::find(repo_files.begin(), repo_files.end(), "config.json") != repo_files.end();
  const bool has_safetensors = std::any_of(repo_files.begin(), repo_files.end(), [](const std::string& f) {
    return f.find('/') == std::string::npos && ends_with_ci(f, ".safetensors");
  });
  // A PEFT adapter (LoRA) has adapter_config.json instead of a model's config.json.
  const bool has_adapter_config =
      std::find(repo_files.begin(), repo_files.end(), "adapter_config.json") != repo_files.end();
  if ((has_config || has_adapter_config) && has_safetensors) {
    hub_selection s;
    for (const auto& f : repo_files)
      if (is_folder_file(f)) s.files.push_back(f);
    std::sort(s.files.begin(), s.files.end());
    return s;
  }
  const auto ggufs = model_ggufs(repo_files);
  if (ggufs.size() == 1) return select_gguf(ggufs.front(), repo_files);
  if (!ggufs.empty()) {
    for (const auto& f : ggufs)
      if (has_tag(f, default_gguf_tag)) return select_gguf(f, repo_files);
    return make_error(errc::invalid_argument, name.repo + " has several GGUF files and none is " + default_gguf_tag +
                                                  ": name one (hf:" + name.repo + ":QUANT or hf:" + name.repo +
                                                  "/FILE.gguf); it has " + listing(ggufs));
  }
  if (has_config) return make_error(errc::unsupported, name.repo + " has a config.json but no safetensors weights (inflight reads safetensors and GGUF)");
  return make_error(errc::not_found, name.repo + " has neither a Hugging Face model (config.json + safetensors), a PEFT "
                                                 "adapter (adapter_config.json + safetensors) nor GGUF files");
}

}  // namespace inflight::hub
