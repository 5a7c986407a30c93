#include "actors/gateway/openai_request.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>

#include "actors/gateway/chat_messages.hpp"
#include "actors/gateway/chat_request.hpp"
#include "actors/gateway/constraint_request.hpp"
#include "actors/gateway/json_fields.hpp"
#include "actors/gateway/unsupported_fields.hpp"
#include "core/base/json_depth.hpp"
#include "core/engine/request/prompt_limit.hpp"
#include "core/engine/sampling/sampler.hpp"
#include "core/engine/spec/spec_config.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

api_error context_error(std::size_t num_tokens, const served_model& m, const char* param) {
  return bad_request("the prompt has " + std::to_string(num_tokens) + " tokens, but the model's context is " +
                         std::to_string(m.max_context) + " tokens (prompt and output together)",
                     param, "context_length_exceeded");
}

api_result<std::vector<token_id>> token_list(const json& list, const served_model& m, const char* param) {
  std::vector<token_id> ids;
  for (const auto& v : list) {
    if (!v.is_number_integer()) return std::unexpected(bad_request(std::string(param) + " must hold integers", param));
    const auto id = v.get<std::int64_t>();
    if (id < 0 || id >= m.vocab_size) {
      return std::unexpected(bad_request(std::string(param) + " holds token id " + std::to_string(id) +
                                             ", outside the vocabulary [0, " + std::to_string(m.vocab_size) + ")",
                                         param));
    }
    ids.push_back(static_cast<token_id>(id));
  }
  return ids;
}

api_result<std::vector<token_id>> text_prompt(const json& v, const served_model& m, bool add_special) {
  const auto& text = v.get_ref<const std::string&>();
  if (!is_valid_utf8(text)) return std::unexpected(bad_request("prompt is not valid UTF-8", "prompt", "invalid_utf8"));
  return tokenize_text(m, text, add_special);
}

/// prompt: a string, a list of strings, a list of token ids or a list of token-id lists.
api_result<std::vector<std::vector<token_id>>> parse_prompts(const json& p, const served_model& m, bool add_special) {
  const auto shape_error = [] {
    return std::unexpected(bad_request(
        "prompt must be a string, a list of strings, a list of token ids or a list of token-id lists", "prompt"));
  };
  std::vector<std::vector<token_id>> out;
  if (p.is_string()) {
    auto ids = text_prompt(p, m, add_special);
    if (!ids) return std::unexpected(ids.error());
    out.push_back(std::move(*ids));
  } else if (!p.is_array() || p.empty()) {
    if (p.is_array()) return std::unexpected(bad_request("prompt must not be empty", "prompt"));
    return shape_error();
  } else if (p.front().is_number()) {
    auto ids = token_list(p, m, "prompt");
    if (!ids) return std::unexpected(ids.error());
    out.push_back(std::move(*ids));
  } else {
    for (const auto& item : p) {
      if (!item.is_string() && !item.is_array()) return shape_error();
      auto ids = item.is_string() ? text_prompt(item, m, add_special) : token_list(item, m, "prompt");
      if (!ids) return std::unexpected(ids.error());
      out.push_back(std::move(*ids));
    }
  }
  for (const auto& ids : out) {
    if (ids.empty()) return std::unexpected(bad_request("prompt must not be empty", "prompt"));
    if (int(ids.size()) > max_prompt_tokens(m.max_context, false))
      return std::unexpected(context_error(ids.size(), m, "prompt"));
  }
  return out;
}

api_result<std::vector<std::vector<token_id>>> parse_chat_prompt(const json& body, const nlohmann::ordered_json& ordered,
                                                                  const served_model& m, openai_request& r) {
  auto msgs = try_parse_messages(body["messages"]);
  if (!msgs) return std::unexpected(msgs.error());
  // Tools: /v1/chat/completions, or a WebSocket generate with messages.
  auto tools = try_parse_tools(body, ordered);
  if (!tools) return std::unexpected(tools.error());
  r.tools = std::move(*tools);
  auto chat = try_parse_chat_prompt(body, ordered, r.tools);
  if (!chat) return std::unexpected(chat.error());
  auto ids = try_tokenize_chat_prompt(m, *chat);
  if (!ids) return std::unexpected(ids.error());
  if (ids->empty()) return std::unexpected(bad_request("messages render to an empty prompt", "messages"));
  if (int(ids->size()) > max_prompt_tokens(m.max_context, false))
    return std::unexpected(context_error(ids->size(), m, "messages"));
  return std::vector<std::vector<token_id>>{std::move(*ids)};
}

opt_error parse_stop(const json& body, std::vector<std::string>& out) {
  const json* v = field(body, "stop");
  if (!v) return {};
  const auto add = [&](const json& s) -> opt_error {
    if (!s.is_string()) return bad_request("stop must be a string or a list of strings", "stop");
    if (s.get_ref<const std::string&>().empty()) return bad_request("stop strings must not be empty", "stop");
    out.push_back(s.get<std::string>());
    return {};
  };
  if (!v->is_array()) return add(*v);
  if (v->size() > 16) return bad_request("stop may hold at most 16 strings", "stop");
  for (const auto& s : *v)
    if (auto e = add(s)) return e;
  return {};
}

opt_error parse_seed(const json& body, std::optional<std::uint64_t>& out) {
  if (!field(body, "seed")) return {};
  long long seed = 0;
  if (auto e = read_integer(body, "seed", LLONG_MIN, LLONG_MAX, seed)) return e;
  out = static_cast<std::uint64_t>(seed);
  return {};
}

opt_error parse_sampling(const json& body, const served_model& m, sampling_params& p) {
  if (auto e = read_float(body, "temperature", p.temperature)) return e;
  if (auto e = read_float(body, "top_p", p.top_p)) return e;
  if (auto e = read_int(body, "top_k", -1, INT_MAX, p.top_k)) return e;
  if (auto e = read_float(body, "min_p", p.min_p)) return e;
  if (auto e = read_float(body, "presence_penalty", p.presence_penalty)) return e;
  if (auto e = read_float(body, "frequency_penalty", p.frequency_penalty)) return e;
  if (auto e = read_float(body, "repetition_penalty", p.repetition_penalty)) return e;
  if (auto e = read_bool(body, "ignore_eos", p.ignore_eos)) return e;
  if (const json* v = field(body, "stop_token_ids")) {
    if (!v->is_array()) return bad_request("stop_token_ids must be a list of token ids", "stop_token_ids");
    auto ids = token_list(*v, m, "stop_token_ids");
    if (!ids) return ids.error();
    p.stop_token_ids = std::move(*ids);
  }
  return {};
}

/// completions: logprobs is an int (top alternatives); chat: logprobs bool + top_logprobs.
opt_error parse_logprobs(const json& body, api_kind kind, openai_request& r) {
  const json* v = field(body, "logprobs");
  const bool is_flag = kind == api_kind::chat || (v && v->is_boolean());
  if (!is_flag) {
    if (!v) return {};
    r.has_logprobs = true;
    return read_int(body, "logprobs", 0, max_top_logprobs, r.num_top_logprobs);
  }
  if (auto e = read_bool(body, "logprobs", r.has_logprobs)) return e;
  if (auto e = read_int(body, "top_logprobs", 0, max_top_logprobs, r.num_top_logprobs)) return e;
  if (field(body, "top_logprobs") && !r.has_logprobs)
    return bad_request("top_logprobs needs logprobs set to true", "top_logprobs");
  return {};
}

/// Structured outputs (every alias) or the grammar of a forced tool call, compiled; logit_bias.
opt_error parse_constraints(const json& body, const nlohmann::ordered_json& ordered, const served_model& m,
                            openai_request& r) {
  auto c = try_parse_constraint(body, ordered);
  if (!c) return c.error();
  if (r.tools.is_forced()) {
    if (*c) return bad_request("tool_choice forces a tool call: " + (*c)->param + " cannot be given too", (*c)->param,
                               "conflicting_constraints");
    auto index = try_compile_tool_grammar(r.tools, m);
    if (!index) return index.error();
    r.base.params.grammar = std::move(*index);
  } else if (*c) {
    auto index = try_compile_constraint(m, **c);
    if (!index) return index.error();
    r.base.params.grammar = std::move(*index);
  }
  return parse_logit_bias(body, m, r.base.params.logit_bias);
}

/// ttft_target_ms / tpot_target_ms: latency targets for an SLO-aware policy (0 = the
/// deployment's [scheduler] default).
opt_error parse_targets(const json& body, slo_targets& out) {
  for (auto [key, target] : {std::pair{"ttft_target_ms", &out.ttft_ms}, std::pair{"tpot_target_ms", &out.tpot_ms}}) {
    float ms = 0.0f;
    if (auto e = read_float(body, key, ms)) return e;
    if (ms < 0.0f || ms > 3.6e6f)
      return bad_request(std::string(key) + " must be in [0, 3600000] milliseconds (0 = the server's default)", key);
    *target = ms;
  }
  return {};
}

/// `speculative`: a drafter by name ("off", "ngram", "suffix", "draft", a drafter
/// plugin's), or {method, num_speculative_tokens}; what it leaves out is the deployment's
/// [speculative]. A name no drafter has is the engine's refusal (a 400 too).
opt_error parse_speculation(const json& body, speculation_choice& out) {
  const json* spec = field(body, "speculative");
  if (spec == nullptr) return {};
  static constexpr const char* expected =
      "speculative must be \"off\", \"ngram\", \"suffix\", \"draft\", a drafter plugin's name or {\"method\": ..., "
      "\"num_speculative_tokens\": 0..16}";
  std::string method;
  if (spec->is_string()) {
    method = spec->get<std::string>();
  } else if (spec->is_object()) {
    if (auto e = read_string(*spec, "method", method)) return e;
    int k = -1;
    if (auto e = read_int(*spec, "num_speculative_tokens", 0, 16, k)) return e;
    if (k >= 0) out.num_tokens = k;
  } else {
    return bad_request(expected, "speculative");
  }
  if (!method.empty() && !is_speculative_method_name(method)) return bad_request(expected, "speculative");
  if (!method.empty()) out.method = method;
  return {};
}

opt_error parse_options(const json& body, const nlohmann::ordered_json& ordered, const served_model& m,
                        openai_request& r) {
  if (auto e = read_int(body, "n", 1, m.max_choices, r.n)) return e;
  if (r.num_choices() > m.max_choices) {
    return bad_request("n times the number of prompts must be at most " + std::to_string(m.max_choices) +
                           " (server.max_choices)", "n");
  }
  if (auto e = read_bool(body, "stream", r.stream)) return e;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) return bad_request("stream_options must be an object", "stream_options");
    if (auto e = read_bool(*so, "include_usage", r.include_usage)) return e;
  }
  if (r.kind == api_kind::completion)
    if (auto e = read_bool(body, "echo", r.echo)) return e;
  if (auto e = read_scheduling_fields(body, r.base.priority, r.base.cache_salt)) return e;
  if (auto e = parse_targets(body, r.base.targets)) return e;
  if (auto e = parse_speculation(body, r.base.speculation)) return e;
  if (auto e = read_string(body, "user", r.user)) return e;
  if (auto e = parse_stop(body, r.base.stop)) return e;
  if (auto e = parse_logprobs(body, r.kind, r)) return e;
  auto& p = r.base.params;
  if (auto e = parse_sampling(body, m, p)) return e;
  if (auto e = parse_seed(body, r.base.seed)) return e;
  p.logprobs = r.has_logprobs ? std::max(1, r.num_top_logprobs) : 0;
  std::size_t longest = 0;
  for (const auto& ids : r.prompts) longest = std::max(longest, ids.size());
  p.max_tokens = r.is_chat ? m.max_context - int(longest) : 16;
  if (auto e = read_int(body, "max_tokens", min_max_tokens, INT_MAX, p.max_tokens)) return e;
  if (r.kind == api_kind::chat)
    if (auto e = read_int(body, "max_completion_tokens", min_max_tokens, INT_MAX, p.max_tokens)) return e;
  if (auto ok = try_validate(p); !ok) {
    const auto& msg = ok.error().message;
    return bad_request(msg, msg.substr(0, msg.find(' ')));
  }
  return parse_constraints(body, ordered, m, r);  // last: compiling is the costly check
}

/// A chat's reasoning: split when the model has a parser; `thinking_budget` caps it.
/// The engine's reasoning phase (the grammar after the reasoning, the budget) needs the
/// markers as single tokens.
opt_error parse_reasoning(const json& body, const served_model& m, openai_request& r) {
  std::optional<int> budget;
  if (field(body, "thinking_budget")) {
    int n = 0;
    if (auto e = read_int(body, "thinking_budget", 0, INT_MAX, n)) return e;
    budget = n;
  }
  if (!r.is_chat || !m.reasoning) {
    if (budget) return bad_request("thinking_budget needs a model with a reasoning parser (model.reasoning_parser)", "thinking_budget");
    return {};
  }
  r.reasoning = m.reasoning;
  const auto& prompt = r.prompts.front();
  const std::size_t tail = std::min<std::size_t>(prompt.size(), 8);
  r.is_reasoning_open = prompt_opens_reasoning(*m.reasoning, detokenize(m, std::span(prompt).last(tail)));
  if (!m.reasoning_tokens) {
    if (budget) return bad_request("thinking_budget needs a model whose reasoning markers are single tokens", "thinking_budget");
    return {};
  }
  reasoning_phase phase = *m.reasoning_tokens;
  phase.is_open = r.is_reasoning_open;
  phase.budget = budget;
  r.base.params.reasoning = phase;
  return {};
}

}  // namespace

generate_request openai_request::choice_request(int index) const {
  generate_request out = base;
  out.prompt = prompts[static_cast<std::size_t>(index / n)];
  if (out.seed) *out.seed += static_cast<std::uint64_t>(index % n);
  return out;
}

api_result<openai_request> try_parse_request(const json& body, api_kind kind, const served_model& m,
                                             const nlohmann::ordered_json& ordered) {
  if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
  openai_request r;
  r.kind = kind;
  if (auto e = check_model_name(body, m.name, m.aliases, m.adapter_names(), &r.base.adapter)) return std::unexpected(*e);
  const bool has_messages = body.contains("messages") && !body["messages"].is_null();
  r.is_chat = kind == api_kind::chat || (kind == api_kind::websocket && has_messages);
  if (auto e = check_unsupported_fields(body, r.is_chat)) return std::unexpected(*e);
  bool add_special = true;  // vLLM's add_special_tokens (completions): false leaves out the BOS
  if (!r.is_chat)
    if (auto e = read_bool(body, "add_special_tokens", add_special)) return std::unexpected(*e);
  const char* needed = r.is_chat ? "messages" : "prompt";
  if (!field(body, needed)) return std::unexpected(bad_request(std::string(needed) + " is required", needed));
  auto prompts = r.is_chat ? parse_chat_prompt(body, ordered, m, r) : parse_prompts(body["prompt"], m, add_special);
  if (!prompts) return std::unexpected(prompts.error());
  r.prompts = std::move(*prompts);
  if (auto e = parse_options(body, ordered, m, r)) return std::unexpected(*e);
  if (auto e = parse_reasoning(body, m, r)) return std::unexpected(*e);
  r.base.timeout_s = m.request_timeout_s;
  return r;
}

api_result<json> try_parse_json(const std::string& text) {
  if (json_nests_deeper_than(text)) {
    return std::unexpected(bad_request("the body nests arrays and objects deeper than " +
                                           std::to_string(max_json_depth) + " levels",
                                       {}, "json_too_deep"));
  }
  try {
    json body = json::parse(text);
    if (!body.is_object()) return std::unexpected(bad_request("the request body must be a JSON object"));
    return body;
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    const bool is_utf8 = what.find("UTF-8") != std::string::npos;
    return std::unexpected(bad_request((is_utf8 ? "the body is not valid UTF-8 JSON: " : "the body is not valid JSON: ") + what,
                                       {}, is_utf8 ? "invalid_utf8" : "invalid_json"));
  }
}

api_result<std::vector<token_id>> try_parse_tokenize(const json& body, const served_model& m,
                                                     const nlohmann::ordered_json& ordered) {
  bool add_special = true;
  if (auto e = read_bool(body, "add_special_tokens", add_special)) return std::unexpected(*e);
  if (field(body, "messages")) {
    // the prompt chat completions would render: same messages, tools and template fields
    auto msgs = try_parse_messages(body["messages"]);
    if (!msgs) return std::unexpected(msgs.error());
    auto tools = try_parse_tools(body, ordered);
    if (!tools) return std::unexpected(tools.error());
    auto chat = try_parse_chat_prompt(body, ordered, *tools);
    if (!chat) return std::unexpected(chat.error());
    return try_tokenize_chat_prompt(m, *chat);
  }
  const json* p = field(body, "prompt");
  if (!p) return std::unexpected(bad_request("prompt or messages is required", "prompt"));
  if (!p->is_string()) return std::unexpected(bad_request("prompt must be a string", "prompt"));
  return text_prompt(*p, m, add_special);
}

api_result<std::vector<token_id>> try_parse_detokenize(const json& body, const served_model& m) {
  const json* t = field(body, "tokens");
  if (!t) return std::unexpected(bad_request("tokens is required", "tokens"));
  if (!t->is_array()) return std::unexpected(bad_request("tokens must be a list of token ids", "tokens"));
  return token_list(*t, m, "tokens");
}

}  // namespace inflight::gateway
