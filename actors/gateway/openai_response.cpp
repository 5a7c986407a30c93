#include "actors/gateway/openai_response.hpp"

#include <chrono>
#include <random>

namespace inflight::gateway {

using nlohmann::json;

std::string make_response_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens, int draft_tokens, int accepted_tokens) {
  json usage = {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  // Speculative decoding's drafts, in OpenAI's fields for predicted tokens.
  if (draft_tokens > 0)
    usage["completion_tokens_details"] = {{"accepted_prediction_tokens", accepted_tokens},
                                          {"rejected_prediction_tokens", draft_tokens - accepted_tokens}};
  return usage;
}

namespace {

json byte_list(const std::string& bytes) {
  json out = json::array();
  for (unsigned char c : bytes) out.push_back(int(c));
  return out;
}

json nullable(const char* s) { return s ? json(s) : json(nullptr); }

}  // namespace

json completion_logprobs(const served_model& m, token_id prev, const std::vector<sampled_token>& tokens, int num_top,
                         int text_offset) {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()},
              {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const auto& t : tokens) {
    const std::string text = m.tok->token_bytes(prev, t.token);
    out["tokens"].push_back(text);
    out["token_logprobs"].push_back(t.logprob);
    json top = json::object();
    for (int i = 0; i < num_top && i < int(t.top_logprobs.size()); ++i)
      top[m.tok->token_bytes(prev, t.top_logprobs[i].token)] = t.top_logprobs[i].logprob;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(text_offset);
    text_offset += int(text.size());
    prev = t.token;
  }
  return out;
}

json chat_logprobs_content(const served_model& m, token_id prev, const std::vector<sampled_token>& tokens,
                           int num_top) {
  json out = json::array();
  for (const auto& t : tokens) {
    const std::string text = m.tok->token_bytes(prev, t.token);
    json top = json::array();
    for (int i = 0; i < num_top && i < int(t.top_logprobs.size()); ++i) {
      const std::string alt = m.tok->token_bytes(prev, t.top_logprobs[i].token);
      top.push_back({{"token", alt}, {"logprob", t.top_logprobs[i].logprob}, {"bytes", byte_list(alt)}});
    }
    out.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", byte_list(text)}, {"top_logprobs", top}});
    prev = t.token;
  }
  return out;
}

json completion_chunk(const response_meta& meta, int index, const std::string& text, const json& logprobs,
                      const char* finish_reason) {
  json choice = {{"index", index}, {"text", text}, {"logprobs", logprobs}, {"finish_reason", nullable(finish_reason)}};
  return {{"id", meta.id}, {"object", "text_completion"}, {"created", meta.created},
          {"model", meta.model}, {"choices", json::array({choice})}};
}

json chat_chunk(const response_meta& meta, int index, const json& delta, const json& logprobs,
                const char* finish_reason) {
  json choice = {{"index", index}, {"delta", delta}, {"logprobs", logprobs}, {"finish_reason", nullable(finish_reason)}};
  return {{"id", meta.id}, {"object", "chat.completion.chunk"}, {"created", meta.created},
          {"model", meta.model}, {"choices", json::array({choice})}};
}

json usage_chunk(const response_meta& meta, bool is_chat, const json& usage) {
  return {{"id", meta.id}, {"object", is_chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created}, {"model", meta.model}, {"choices", json::array()}, {"usage", usage}};
}

json completion_response(const response_meta& meta, const std::vector<choice_result>& choices, const json& usage) {
  json list = json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    list.push_back({{"index", i}, {"text", choices[i].text}, {"logprobs", choices[i].logprobs},
                    {"finish_reason", choices[i].finish_reason}, {"stop_reason", choices[i].stop_reason}});
  }
  return {{"id", meta.id}, {"object", "text_completion"}, {"created", meta.created},
          {"model", meta.model}, {"choices", list}, {"usage", usage}};
}

json chat_response(const response_meta& meta, const std::vector<choice_result>& choices, const json& usage) {
  json list = json::array();
  for (std::size_t i = 0; i < choices.size(); ++i) {
    // OpenAI's schema requires refusal on the message and on a logprobs object.
    json logprobs = choices[i].logprobs.is_null() ? json(nullptr)
                                                  : json{{"content", choices[i].logprobs}, {"refusal", nullptr}};
    json message = {{"role", "assistant"},
                    {"content", choices[i].is_content_null ? json(nullptr) : json(choices[i].text)},
                    {"refusal", nullptr}};
    if (const auto& r = choices[i].reasoning) {
      // vLLM's reasoning_content and its newer name; clients read either.
      const json text = r->empty() ? json(nullptr) : json(*r);
      message["reasoning_content"] = text;
      message["reasoning"] = text;
    }
    if (!choices[i].tool_calls.is_null()) message["tool_calls"] = choices[i].tool_calls;
    list.push_back({{"index", i}, {"message", std::move(message)}, {"logprobs", std::move(logprobs)},
                    {"finish_reason", choices[i].finish_reason}, {"stop_reason", choices[i].stop_reason}});
  }
  return {{"id", meta.id}, {"object", "chat.completion"}, {"created", meta.created},
          {"model", meta.model}, {"choices", list}, {"usage", usage}};
}

json tool_call_json(const std::string& id, const std::string& name, const std::string& arguments) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

json tool_call_delta(int index, const std::string& id, const std::optional<std::string>& name,
                     const std::string& arguments) {
  return {{"tool_calls", json::array({tool_call_piece(index, id, name, arguments)})}};
}

json tool_call_piece(int index, const std::string& id, const std::optional<std::string>& name,
                     const std::string& arguments) {
  json call = {{"index", index}};
  if (!id.empty()) {
    call["id"] = id;
    call["type"] = "function";
  }
  json function = json::object();
  if (name) function["name"] = *name;
  function["arguments"] = arguments;
  call["function"] = std::move(function);
  return call;
}

json chat_role_delta() { return {{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}; }

json models_list(const served_model& m) {
  json model = {{"id", m.name}, {"object", "model"}, {"created", m.created},
                {"owned_by", "inflight"}, {"max_model_len", m.max_context}};
  json data = json::array({model});
  for (const auto& adapter : m.adapter_names()) {  // vLLM's way: an adapter names its base as parent
    data.push_back({{"id", adapter}, {"object", "model"}, {"created", m.created}, {"owned_by", "inflight"},
                    {"max_model_len", m.max_context}, {"parent", m.name}});
  }
  return {{"object", "list"}, {"data", data}};
}

}  // namespace inflight::gateway
