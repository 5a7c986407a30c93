#include "actors/gateway/responses_shape.hpp"

#include <utility>

#include "actors/gateway/openai_response.hpp"
#include "actors/gateway/sse.hpp"

namespace inflight::gateway {

using nlohmann::json;

namespace {

/// The status an item ends with: a reply cut by max_output_tokens is incomplete.
const char* item_status(const std::string& finish_reason) { return finish_reason == "length" ? "incomplete" : "completed"; }

json text_part(const char* type, const std::string& text) {
  if (std::string_view(type) == "reasoning_text") return {{"type", type}, {"text", text}};
  return {{"type", type}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json reasoning_item(const std::string& id, const std::string& text, const char* status) {
  return {{"id", id}, {"type", "reasoning"}, {"summary", json::array()},
          {"content", json::array({text_part("reasoning_text", text)})}, {"status", status}};
}

json message_item(const std::string& id, const std::string& text, const char* status) {
  return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"},
          {"content", json::array({text_part("output_text", text)})}};
}

json call_item(const std::string& id, const std::string& call_id, const std::string& name, const std::string& arguments,
               const char* status) {
  return {{"id", id}, {"type", "function_call"}, {"status", status}, {"call_id", call_id}, {"name", name},
          {"arguments", arguments}};
}

/// The `error` object of a failed Response (its code from OpenAI's short list).
/// A non-empty string.
bool is_text(const json& v) { return v.is_string() && !v.get_ref<const std::string&>().empty(); }

json response_error(const api_error& e) {
  const char* code = e.status == 429 ? "rate_limit_exceeded" : e.status == 400 ? "invalid_prompt" : "server_error";
  return {{"code", code}, {"message", e.message}};
}

}  // namespace

json responses_usage(const json& chat_usage, int num_reasoning_tokens) {
  const int cached = chat_usage.contains("prompt_tokens_details")
                         ? chat_usage["prompt_tokens_details"].value("cached_tokens", 0) : 0;
  return {{"input_tokens", chat_usage.value("prompt_tokens", 0)},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", chat_usage.value("completion_tokens", 0)},
          {"output_tokens_details", {{"reasoning_tokens", num_reasoning_tokens}}},
          {"total_tokens", chat_usage.value("total_tokens", 0)}};
}

json response_object(const response_head& head, const std::string& status, const json& output, const json& usage,
                     const json& error, int num_reasoning_tokens) {
  json r = {{"id", head.id}, {"object", "response"}, {"created_at", head.created_at}, {"status", status}};
  r["completed_at"] = status == "completed" ? json(unix_now()) : json(nullptr);
  r["error"] = error;
  r["incomplete_details"] = status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr);
  r["model"] = head.model;
  r["output"] = output;
  if (!usage.is_null()) r["usage"] = responses_usage(usage, num_reasoning_tokens);  // none while in progress
  for (const auto& [key, value] : head.echo.items()) r[key] = value;
  return r;
}

json output_items_of(const json& body) {
  const json& choice = body["choices"][0];
  const json& message = choice["message"];
  const std::string finish = choice.value("finish_reason", json("stop")).get<std::string>();
  const char* status = item_status(finish);
  json out = json::array();
  if (const auto it = message.find("reasoning_content"); it != message.end() && is_text(*it))
    out.push_back(reasoning_item(make_response_id("rs_"), it->get<std::string>(), status));
  const json calls = message.value("tool_calls", json::array());
  const json content = message.value("content", json());
  if ((content.is_string() && !content.get_ref<const std::string&>().empty()) || calls.empty())
    out.push_back(message_item(make_response_id("msg_"), content.is_string() ? content.get<std::string>() : "", status));
  for (const auto& call : calls) {
    out.push_back(call_item(make_response_id("fc_"), call["id"], call["function"]["name"],
                            call["function"]["arguments"], "completed"));
  }
  return out;
}

responses_shape::responses_shape(response_head head, const responses_request& request, responses_store& store,
                                 std::function<int(const std::string&)> count_tokens)
    : head_(std::move(head)),
      input_items_(request.input_items),
      previous_(request.previous),
      is_stored_(request.store),
      store_(store),
      count_tokens_(std::move(count_tokens)) {}

std::string responses_shape::event(const char* type, json payload) {
  payload["type"] = type;
  payload["sequence_number"] = num_events_++;
  return sse_named_event(type, payload);
}

std::string responses_shape::start() {
  if (is_started_) return {};
  is_started_ = true;
  const json response = response_object(head_, "in_progress", json::array(), nullptr);
  std::string out = event("response.created", {{"response", response}});
  return out + event("response.in_progress", {{"response", response}});
}

json responses_shape::item_ref() const {
  return {{"item_id", item_["id"]}, {"output_index", output_.size()}};
}

std::string responses_shape::open_item(item_kind kind, json item) {
  std::string out = close_item();
  open_ = kind;
  item_ = std::move(item);
  text_.clear();
  out += event("response.output_item.added", {{"output_index", output_.size()}, {"item", item_}});
  if (kind == item_kind::call) return out;
  json part = item_ref();
  part["content_index"] = 0;
  part["part"] = text_part(kind == item_kind::reasoning ? "reasoning_text" : "output_text", "");
  return out + event("response.content_part.added", std::move(part));
}

std::string responses_shape::add_text(item_kind kind, const std::string& text) {
  std::string out;
  if (open_ != kind) {
    const std::string prefix = kind == item_kind::reasoning ? "rs_" : "msg_";
    json item = kind == item_kind::reasoning
                    ? json{{"id", make_response_id(prefix)}, {"type", "reasoning"}, {"summary", json::array()},
                           {"content", json::array()}, {"status", "in_progress"}}
                    : json{{"id", make_response_id(prefix)}, {"type", "message"}, {"status", "in_progress"},
                           {"role", "assistant"}, {"content", json::array()}};
    out = open_item(kind, std::move(item));
  }
  if (text.empty()) return out;
  text_ += text;
  if (kind == item_kind::reasoning) reasoning_ += text;
  json delta = item_ref();
  delta["content_index"] = 0;
  delta["delta"] = text;
  if (kind == item_kind::message) delta["logprobs"] = json::array();
  return out + event(kind == item_kind::reasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
                     std::move(delta));
}

/// A delta.tool_calls piece: the first of a call (id and name) opens its item.
std::string responses_shape::add_call(const json& piece) {
  std::string out;
  const json fn = piece.value("function", json::object());
  if (piece.contains("id") && piece["id"].is_string())
    out = open_item(item_kind::call, call_item(make_response_id("fc_"), piece["id"], fn.value("name", ""), "", "in_progress"));
  const json given = fn.value("arguments", json(""));
  const std::string args = given.is_string() ? given.get<std::string>() : "";
  if (open_ != item_kind::call || args.empty()) return out;
  text_ += args;
  json delta = item_ref();
  delta["delta"] = args;
  return out + event("response.function_call_arguments.delta", std::move(delta));
}

std::string responses_shape::close_item() {
  if (open_ == item_kind::none) return {};
  std::string out;
  const char* status = item_status(finish_reason_);
  json ref = item_ref();
  if (open_ == item_kind::call) {
    json done = ref;
    done["name"] = item_["name"];
    done["arguments"] = text_;
    out += event("response.function_call_arguments.done", std::move(done));
    item_ = call_item(item_["id"], item_["call_id"], item_["name"], text_, "completed");
  } else {
    const bool is_reasoning = open_ == item_kind::reasoning;
    json done = ref;
    done["content_index"] = 0;
    done["text"] = text_;
    if (!is_reasoning) done["logprobs"] = json::array();
    out += event(is_reasoning ? "response.reasoning_text.done" : "response.output_text.done", std::move(done));
    json part = ref;
    part["content_index"] = 0;
    part["part"] = text_part(is_reasoning ? "reasoning_text" : "output_text", text_);
    out += event("response.content_part.done", std::move(part));
    item_ = is_reasoning ? reasoning_item(item_["id"], text_, status) : message_item(item_["id"], text_, status);
  }
  out += event("response.output_item.done", {{"output_index", output_.size()}, {"item", item_}});
  output_.push_back(std::move(item_));
  open_ = item_kind::none;
  return out;
}

std::string responses_shape::on_chunk(const json& chunk) {
  std::string out = start();
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return out;
  const json& choice = choices->front();
  const json delta = choice.value("delta", json::object());
  // The role chunk's content is "": it opens no message.
  if (const auto r = delta.find("reasoning_content"); r != delta.end() && is_text(*r))
    out += add_text(item_kind::reasoning, r->get<std::string>());
  if (const auto c = delta.find("content"); c != delta.end() && is_text(*c))
    out += add_text(item_kind::message, c->get<std::string>());
  if (const auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array())
    for (const auto& piece : *calls) out += add_call(piece);
  if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
    finish_reason_ = f->get<std::string>();
    out += close_item();
  }
  return out;
}

std::string responses_shape::on_stream_end(const json& usage) {
  std::string out = start();  // each event numbered in turn: one call per statement
  out += close_item();
  // A reply with neither text nor calls is still a message, as OpenAI sends it.
  if (output_.empty()) {
    out += add_text(item_kind::message, "");
    out += close_item();
  }
  const bool is_incomplete = finish_reason_ == "length";
  const int num_reasoning = reasoning_.empty() ? 0 : count_tokens_(reasoning_);
  const json response = response_object(head_, is_incomplete ? "incomplete" : "completed", output_, usage, nullptr,
                                        num_reasoning);
  keep(response, output_);
  return out + event(is_incomplete ? "response.incomplete" : "response.completed", {{"response", response}});
}

std::string responses_shape::on_stream_error(const api_error& e) {
  std::string out = start();
  out += close_item();
  const json param = e.param.empty() ? json(nullptr) : json(e.param);
  const json code = e.code.empty() ? json(nullptr) : json(e.code);
  out += event("error", {{"code", code}, {"message", e.message}, {"param", param}});
  const json response = response_object(head_, "failed", output_, nullptr, response_error(e));
  return out + event("response.failed", {{"response", response}});
}

call_output responses_shape::on_response(const json& body) {
  const json output = output_items_of(body);
  const json& choice = body["choices"][0];
  const bool is_incomplete = choice.value("finish_reason", json("")) == "length";
  const json reasoning = choice["message"].value("reasoning_content", json());
  const int num_reasoning = is_text(reasoning) ? count_tokens_(reasoning.get<std::string>()) : 0;
  const json response = response_object(head_, is_incomplete ? "incomplete" : "completed", output,
                                        body.value("usage", json::object()), nullptr, num_reasoning);
  keep(response, output);
  return {200, dump_json(response), true};
}

call_output responses_shape::on_error(const api_error& e) {
  return {e.status, dump_json(error_body(to_responses_error(e))), true};
}

void responses_shape::keep(const json& response, const json& output) {
  if (!is_stored_) return;
  auto turn = std::make_shared<conversation_turn>();
  turn->parent = previous_;
  turn->items = input_items_;
  for (const auto& item : output) turn->items.push_back(item);
  store_.put(head_.id, {response, std::move(turn)});
}

}  // namespace inflight::gateway
