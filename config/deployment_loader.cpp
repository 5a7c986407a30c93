#include "config/deployment_loader.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/deployment_keys.hpp"

namespace inflight::config {
namespace {

/// A [scheduler.<policy>] table goes to the plugin as JSON text.
result<void> apply_policy_table(deployment& d, const std::string& policy, const toml::table& table) {
  std::ostringstream ss;
  ss << toml::json_formatter{table};
  d.scheduler.policy_settings[policy] = ss.str();
  return {};
}

result<void> apply_table(deployment& d, const toml::table& table, const std::string& prefix);

/// [lora] adapters = { name = "folder", ... } (kept sorted by name, as toml++ keeps tables).
result<void> apply_lora_adapters(deployment& d, const toml::node& node) {
  const auto* table = node.as_table();
  if (table == nullptr)
    return make_error(errc::invalid_argument, "lora.adapters must be a table of names and adapter folders: "
                                              "adapters = { sql = \"/adapters/sql\" }");
  d.lora.adapters.clear();
  for (const auto& [name, path] : *table) {
    if (!path.is_string() || path.as_string()->get().empty())
      return make_error(errc::invalid_argument, "lora.adapters." + std::string(name.str()) + " must be a folder (a string)");
    d.lora.adapters.emplace_back(std::string(name.str()), path.as_string()->get());
  }
  return {};
}

/// One [[models]] table: name, aliases, any [model] key, and an [engine] table of its own
/// (over the deployment's [engine] as the file gives it).
result<model_entry> parse_model_entry(const deployment& d, const toml::table& table, std::size_t index) {
  const std::string where = "models[" + std::to_string(index) + "]";
  deployment scratch;  // [model] keys start from their defaults
  scratch.engine = d.engine;
  model_entry e;
  bool has_engine = false;
  for (const auto& [k, node] : table) {
    const std::string key(k.str());
    if (key == "aliases") {
      const auto* list = node.as_array();
      if (list == nullptr) return make_error(errc::invalid_argument, where + ".aliases must be an array of names");
      for (const auto& a : *list) {
        if (!a.is_string() || a.as_string()->get().empty())
          return make_error(errc::invalid_argument, where + ".aliases must be an array of non-empty strings");
        e.aliases.push_back(a.as_string()->get());
      }
    } else if (key == "keep_alive") {
      deployment keep;
      if (auto ok = apply_key(keep, "server.keep_alive", node); !ok)
        return make_error(errc::invalid_argument, where + ".keep_alive: expected " +
                                                      "a duration (seconds, or a string like \"5m\"; negative = forever)");
      e.keep_alive_s = keep.server.keep_alive_s;
    } else if (key == "lora" && node.is_table()) {  // [models.lora]: adapters over this model, limits over [lora]'s
      scratch.lora = d.lora;
      scratch.lora.adapters.clear();
      for (const auto& [lk, lnode] : *node.as_table()) {
        const std::string lkey(lk.str());
        auto ok = lkey == "adapters" ? apply_lora_adapters(scratch, lnode) : apply_key(scratch, "lora." + lkey, lnode);
        if (!ok) return make_error(ok.error().code, where + ": " + ok.error().message);
      }
      e.lora = scratch.lora;
    } else if (key == "engine" && node.is_table()) {
      has_engine = true;
      if (auto ok = apply_table(scratch, *node.as_table(), "engine"); !ok)
        return make_error(ok.error().code, where + ": " + ok.error().message);
    } else if (node.is_table()) {
      if (auto ok = apply_table(scratch, *node.as_table(), "model." + key); !ok)
        return make_error(ok.error().code, where + ": " + ok.error().message);
    } else if (auto ok = apply_key(scratch, "model." + key, node); !ok) {
      return make_error(ok.error().code, where + ": " + ok.error().message);
    }
  }
  e.model = scratch.model;
  e.name = e.model.name;
  if (e.name.empty()) return make_error(errc::invalid_argument, where + " needs a name (the `model` value that chooses it)");
  if (has_engine) e.engine = scratch.engine;
  return e;
}

result<void> apply_models(deployment& d, const toml::node& node) {
  const auto* list = node.as_array();
  if (list == nullptr || !list->is_array_of_tables())
    return make_error(errc::invalid_argument, "models must be an array of tables ([[models]] with a name and a path each)");
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto e = parse_model_entry(d, *list->get(i)->as_table(), i);
    if (!e) return std::unexpected(e.error());
    d.models.push_back(std::move(*e));
  }
  return {};
}

result<void> apply_table(deployment& d, const toml::table& table, const std::string& prefix) {
  for (const auto& [k, node] : table) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (prefix.empty() && key == "models") {
      if (auto ok = apply_models(d, node); !ok) return ok;
      continue;
    }
    if (key == "lora.adapters") {
      if (auto ok = apply_lora_adapters(d, node); !ok) return ok;
      continue;
    }
    if (prefix == "scheduler" && node.is_table()) {
      if (auto ok = apply_policy_table(d, std::string(k.str()), *node.as_table()); !ok) return ok;
      continue;
    }
    if (node.is_table()) {
      if (auto ok = apply_table(d, *node.as_table(), key); !ok) return ok;
      continue;
    }
    if (auto ok = apply_key(d, key, node); !ok) return ok;
  }
  return {};
}

}  // namespace

static result<void> validate_models(const deployment& d) {
  if (d.models.empty()) return {};
  if (!d.model.path.empty())
    return make_error(errc::invalid_argument, "model.path and [[models]] both name models: with [[models]], give "
                                              "each model its own table (model.path = \"" + d.model.path + "\")");
  std::vector<std::string> names;
  for (const auto& e : d.models) {
    names.push_back(e.name);
    names.insert(names.end(), e.aliases.begin(), e.aliases.end());
  }
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end())
    return make_error(errc::invalid_argument, "[[models]]: the name '" + *dup + "' chooses two models");
  if (!d.lora.adapters.empty())
    return make_error(errc::invalid_argument, "lora.adapters are for a server of one model ([model]); with [[models]] "
                                              "each entry names its own ([models.lora] adapters = {...})");
  // An adapter's name chooses its model: it must not be another model's name or adapter.
  std::vector<std::string> all = names;
  for (const auto& e : d.models)
    if (e.lora)
      for (const auto& a : e.lora->adapters) all.push_back(a.first);
  std::sort(all.begin(), all.end());
  if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end())
    return make_error(errc::invalid_argument, "[[models]]: the name '" + *dup + "' is both a model and a LoRA adapter, "
                                              "or an adapter of two models");
  return {};
}

result<void> validate_deployment(const deployment& d) {
  if (auto ok = validate_models(d); !ok) return ok;
  const auto& sv = d.server;
  if (sv.tls_cert_file.empty() != sv.tls_key_file.empty())
    return make_error(errc::invalid_argument,
                      "server.tls_cert_file and server.tls_key_file go together: HTTPS needs both");
  const auto& c = d.cluster;
  if (c.tls && (c.cert_file.empty() || c.key_file.empty() || c.ca_file.empty()))
    return make_error(errc::invalid_argument,
                      "cluster.tls = true needs cluster.cert_file, cluster.key_file and cluster.ca_file (mutual TLS: "
                      "each side presents its certificate and checks the other's against the CA)");
  if (c.connection_timeout_s <= c.heartbeat_interval_s)
    return make_error(errc::invalid_argument, "cluster.connection_timeout_s must be longer than "
                                              "cluster.heartbeat_interval_s");
  const auto& s = d.model.dummy;
  if (s.num_heads % s.num_kv_heads != 0) {
    return make_error(errc::invalid_argument, "model.dummy.num_heads (" + std::to_string(s.num_heads) +
                                                  ") must be a multiple of model.dummy.num_kv_heads (" +
                                                  std::to_string(s.num_kv_heads) + ")");
  }
  if (s.head_dim == 0 && s.hidden_size % s.num_heads != 0) {
    return make_error(errc::invalid_argument, "model.dummy.hidden_size (" + std::to_string(s.hidden_size) +
                                                  ") must be a multiple of model.dummy.num_heads (" +
                                                  std::to_string(s.num_heads) + ") when head_dim = 0");
  }
  return {};
}

namespace {

/// The text of a file as a deployment, not yet validated (overrides may follow).
result<deployment> parse_unvalidated(const std::string& toml_text, const std::string& source_name) {
  deployment d;
  try {
    auto table = toml::parse(toml_text, source_name);
    if (auto ok = apply_table(d, table, ""); !ok) return std::unexpected(ok.error());
  } catch (const toml::parse_error& e) {
    std::ostringstream ss;
    ss << source_name << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    return make_error(errc::invalid_argument, ss.str());
  }
  return d;
}

result<deployment> read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(errc::io_error, path.string() + ": cannot open config file");
  std::stringstream ss;
  ss << in.rdbuf();
  auto d = parse_unvalidated(ss.str(), path.string());
  if (!d) return d;
  const auto base = path.parent_path();
  auto resolve = [&](std::string& p) {
    if (!p.empty() && std::filesystem::path(p).is_relative() && std::filesystem::exists(base / p)) {
      p = (base / p).lexically_normal().string();
    }
  };
  resolve(d->model.path);
  for (auto& e : d->models) {
    if (e.lora)
      for (auto& adapter : e.lora->adapters) resolve(adapter.second);
    resolve(e.model.path);
    resolve(e.model.tokenizer);
    resolve(e.model.hf_token_file);
  }
  for (auto& adapter : d->lora.adapters) resolve(adapter.second);
  resolve(d->model.tokenizer);
  resolve(d->model.hf_token_file);
  resolve(d->model.config_json);
  resolve(d->scheduler.plugin_dir);
  resolve(d->server.api_key_file);
  resolve(d->server.tls_cert_file);
  resolve(d->server.tls_key_file);
  resolve(d->cluster.cert_file);
  resolve(d->cluster.key_file);
  resolve(d->cluster.ca_file);
  return d;
}

}  // namespace


result<deployment> parse_deployment(const std::string& toml_text, const std::string& source_name) {
  auto d = parse_unvalidated(toml_text, source_name);
  if (!d) return d;
  if (auto ok = validate_deployment(*d); !ok) return std::unexpected(ok.error());
  return d;
}

result<deployment> load_deployment(const std::filesystem::path& path, std::span<const std::string> overrides) {
  deployment defaults;
  result<deployment> d = defaults;
  if (!path.empty()) d = read_file(path);
  if (!d) return d;
  for (const auto& assignment : overrides)
    if (auto ok = apply_override(*d, assignment); !ok) return std::unexpected(ok.error());
  if (auto ok = validate_deployment(*d); !ok) return std::unexpected(ok.error());
  return d;
}

result<void> apply_override(deployment& d, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return make_error(errc::invalid_argument, "--set expects key=value, got '" + assignment + "'");
  }
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  toml::table doc;
  try {
    doc = toml::parse("v = " + value);
  } catch (const toml::parse_error&) {
    doc = toml::table{{"v", value}};  // a bare word is a string: --set model.format=hf
  }
  if (key == "lora.adapters") return apply_lora_adapters(d, *doc.get("v"));  // --set lora.adapters={sql="/a"}
  return apply_key(d, key, *doc.get("v"));
}


std::vector<std::string> known_keys() { return key_descriptions(); }

}  // namespace inflight::config
