#include "actors/gateway/embed_request.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "actors/gateway/json_fields.hpp"
#include "core/engine/request/prompt_limit.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

constexpr const char* input_param = "input";

api_error shape_error() {
  return bad_request("input must be a string, a list of strings, a list of token ids or a list of token-id lists",
                     input_param);
}

std::string input_name(std::size_t index, bool is_list) {
  return is_list ? "input[" + std::to_string(index) + "]" : std::string(input_param);
}

api_result<std::vector<token_id>> text_input(const json& v, const std::string& where, const served_model& m,
                                             bool is_query) {
  const auto& text = v.get_ref<const std::string&>();
  if (text.empty()) return std::unexpected(bad_request(where + " must not be an empty string", input_param));
  if (!is_valid_utf8(text)) return std::unexpected(bad_request(where + " is not valid UTF-8", input_param, "invalid_utf8"));
  const auto& s = *m.embeddings;
  auto ids = tokenize_text(m, is_query ? s.query_prefix + text : text, true);
  const auto eos = m.tok->eos_ids();
  if (s.append_eos && !eos.empty()) ids.push_back(eos.front());
  return ids;
}

api_result<std::vector<token_id>> token_input(const json& list, const std::string& where, const served_model& m) {
  if (list.empty()) return std::unexpected(bad_request(where + " must not be empty", input_param));
  std::vector<token_id> ids;
  for (const auto& v : list) {
    if (!v.is_number_integer()) return std::unexpected(bad_request(where + " must hold integer token ids", input_param));
    const auto id = v.get<std::int64_t>();
    if (id < 0 || id >= m.vocab_size) {
      return std::unexpected(bad_request(where + " holds token id " + std::to_string(id) +
                                             ", outside the vocabulary [0, " + std::to_string(m.vocab_size) + ")",
                                         input_param));
    }
    ids.push_back(token_id(id));
  }
  return ids;
}

opt_error check_length(const std::vector<token_id>& ids, const std::string& where, const served_model& m) {
  const int limit = m.embeddings->max_input_tokens;
  if (int(ids.size()) > limit) {
    return bad_request(where + " has " + std::to_string(ids.size()) + " tokens; at most " + std::to_string(limit) +
                           " per input (embeddings.max_input_tokens)",
                       input_param, "input_too_long");
  }
  if (int(ids.size()) > max_prompt_tokens(m.max_context, true)) {
    return bad_request(where + " has " + std::to_string(ids.size()) + " tokens, but the model's context is " +
                           std::to_string(m.max_context) + " tokens",
                       input_param, "context_length_exceeded");
  }
  return {};
}

/// The items of `input`: one element for a string or a flat token list.
api_result<std::vector<const json*>> input_items(const json& input, const served_model& m, bool& is_list) {
  std::vector<const json*> items;
  is_list = false;
  if (input.is_string()) return std::vector<const json*>{&input};
  if (!input.is_array()) return std::unexpected(shape_error());
  if (input.empty()) return std::unexpected(bad_request("input must not be empty", input_param));
  if (input.front().is_number()) return std::vector<const json*>{&input};
  is_list = true;
  const bool is_text = input.front().is_string();
  for (const auto& item : input) {
    if (is_text ? !item.is_string() : !item.is_array()) return std::unexpected(shape_error());
    items.push_back(&item);
  }
  if (int(items.size()) > m.max_embedding_inputs) {
    return std::unexpected(bad_request("input holds " + std::to_string(items.size()) + " inputs; at most " +
                                           std::to_string(m.max_embedding_inputs) +
                                           " per request (embeddings.max_inputs; each input is queued as one "
                                           "request, so also server.max_waiting_requests)",
                                       input_param, "too_many_inputs"));
  }
  return items;
}

api_result<std::vector<std::vector<token_id>>> parse_inputs(const json& body, const served_model& m, bool is_query) {
  const json* input = field(body, input_param);
  if (input == nullptr) return std::unexpected(bad_request("input is required", input_param));
  bool is_list = false;
  auto items = input_items(*input, m, is_list);
  if (!items) return std::unexpected(items.error());
  std::vector<std::vector<token_id>> out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json& item = *(*items)[i];
    const auto where = input_name(i, is_list);
    auto ids = item.is_string() ? text_input(item, where, m, is_query) : token_input(item, where, m);
    if (!ids) return std::unexpected(ids.error());
    if (auto e = check_length(*ids, where, m)) return std::unexpected(*e);
    out.push_back(std::move(*ids));
  }
  return out;
}

opt_error read_encoding(const json& body, embed_request& r) {
  const json* v = field(body, "encoding_format");
  if (v == nullptr) return {};
  if (v->is_string() && *v == "float") {
    r.encoding = embedding_encoding::float_list;
  } else if (v->is_string() && *v == "base64") {
    r.encoding = embedding_encoding::base64;
  } else {
    return bad_request("encoding_format must be \"float\" or \"base64\"", "encoding_format");
  }
  return {};
}

opt_error read_dimensions(const json& body, const served_model& m, embed_request& r) {
  if (field(body, "dimensions") == nullptr) return {};
  if (auto e = read_int(body, "dimensions", 1, m.embedding_width, r.dimensions)) return e;
  if (!m.embeddings->matryoshka) {
    return bad_request("this model does not support dimensions: its embeddings are not trained to be cut "
                       "(embeddings.matryoshka = false)",
                       "dimensions");
  }
  return {};
}

opt_error read_input_type(const json& body, embed_request& r) {
  std::string type;
  if (auto e = read_string(body, "input_type", type)) return e;
  if (!type.empty() && type != "query" && type != "document")
    return bad_request("input_type must be \"query\" or \"document\"", "input_type");
  r.is_query = type == "query";
  return {};
}

opt_error read_options(const json& body, const served_model& m, embed_request& r) {
  if (auto e = read_encoding(body, r)) return e;
  if (auto e = read_dimensions(body, m, r)) return e;
  if (auto e = read_input_type(body, r)) return e;
  if (auto e = read_string(body, "user", r.user)) return e;
  return read_scheduling_fields(body, r.priority, r.cache_salt);
}

}  // namespace

api_error embeddings_unavailable(const served_model& m) {
  const std::string why = m.embeddings_unavailable.empty() ? "this server does not serve embeddings" : m.embeddings_unavailable;
  return bad_request(why, {}, "embeddings_unavailable");
}

int embed_request::num_prompt_tokens() const {
  int n = 0;
  for (const auto& p : inputs) n += int(p.size());
  return n;
}

api_result<embed_request> try_parse_embeddings(const json& body, const served_model& m) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  if (!m.embeddings) return std::unexpected(embeddings_unavailable(m));
  embed_request r;
  if (auto e = check_model_name(body, m.name, m.aliases, m.adapter_names(), &r.adapter)) return std::unexpected(*e);
  if (auto e = read_options(body, m, r)) return std::unexpected(*e);
  auto inputs = parse_inputs(body, m, r.is_query);
  if (!inputs) return std::unexpected(inputs.error());
  r.inputs = std::move(*inputs);
  return r;
}

std::string base64_floats(std::span<const float> values) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes;
  bytes.reserve(values.size() * 4);
  for (const float v : values) {
    const auto u = std::bit_cast<std::uint32_t>(v);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back((u >> shift) & 0xFF);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = std::uint32_t(bytes[i]) << 16;
    if (n > 1) chunk |= std::uint32_t(bytes[i + 1]) << 8;
    if (n > 2) chunk |= std::uint32_t(bytes[i + 2]);
    out += alphabet[(chunk >> 18) & 63];
    out += alphabet[(chunk >> 12) & 63];
    out += n > 1 ? alphabet[(chunk >> 6) & 63] : '=';
    out += n > 2 ? alphabet[chunk & 63] : '=';
  }
  return out;
}

json embeddings_response(const std::string& model_name, const embed_request& request,
                         const std::vector<std::vector<float>>& embeddings) {
  json data = json::array();
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    json item = {{"object", "embedding"}, {"index", i}};
    if (request.encoding == embedding_encoding::base64) {
      item["embedding"] = base64_floats(embeddings[i]);
    } else {
      item["embedding"] = embeddings[i];
    }
    data.push_back(std::move(item));
  }
  const int num_tokens = request.num_prompt_tokens();
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", model_name},
          {"usage", {{"prompt_tokens", num_tokens}, {"total_tokens", num_tokens}}}};
}

}  // namespace inflight::gateway
