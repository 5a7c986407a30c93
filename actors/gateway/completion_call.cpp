#include "actors/gateway/completion_call.hpp"

#include <utility>

#include "actors/gateway/queue_limits.hpp"
#include "actors/gateway/sse.hpp"
#include "actors/gateway/ws_message.hpp"

namespace inflight::gateway {

using nlohmann::json;

completion_call::completion_call(gateway_state& state, openai_request request, post_fn post, emit_fn emit, json ws_id)
    : state_(state),
      engine_(state.eng()),
      model_(state.model()),
      request_(std::move(request)),
      post_(std::move(post)),
      emit_(std::move(emit)),
      ws_id_(std::move(ws_id)) {}

std::optional<api_error> completion_call::try_start() {
  // An adapter's requests answer under its name (vLLM's way).
  const auto& adapter = request_.base.adapter;
  meta_ = {make_response_id(request_.is_chat ? "chatcmpl-" : "cmpl-"), unix_now(),
           adapter.empty() ? model_.name : adapter};
  const int num_choices = request_.num_choices();
  std::int64_t num_prompt_tokens = 0;
  for (const auto& ids : request_.prompts) num_prompt_tokens += std::int64_t(ids.size()) * request_.n;
  const char* param = request_.n > 1 ? "n" : request_.is_chat ? "messages" : "prompt";
  if (auto e = check_queue_capacity(engine_.settings().server, num_choices, num_prompt_tokens, param)) return e;
  choices_.resize(static_cast<std::size_t>(num_choices));
  if (request_.reasoning)
    for (auto& c : choices_) c.splitter.emplace(*request_.reasoning, request_.is_reasoning_open);
  if (request_.tools.parses_output()) {
    for (int i = 0; i < num_choices; ++i) {
      if (is_ws()) {
        choices_[i].ws_tools.emplace(model_.tool_style.format);
      } else if (request_.stream) {
        choices_[i].tool_writer.emplace(model_.tool_style.format, meta_, i);
      }
    }
  }
  auto self = shared_from_this();
  std::vector<submission> all;
  for (int i = 0; i < num_choices; ++i) {
    auto req = request_.choice_request(i);
    choices_[i].prev = req.prompt.back();
    auto sink = std::make_shared<posting_sink>(
        post_, [self, i](const token_event& ev) { self->on_token(i, ev); },
        [self, i](const finish_event& ev) { self->on_finish(i, ev); });
    all.push_back({std::move(req), std::move(sink)});
  }
  // The choices start together, all or none; a refusal's late events are ignored.
  auto ids = engine_.submit_all(std::move(all));
  if (!ids) {
    is_cancelled_ = true;
    emit_ = nullptr;
    return to_api_error(ids.error());
  }
  for (int i = 0; i < num_choices; ++i) {
    choices_[i].id = (*ids)[std::size_t(i)];
    state_.add_live_request();
  }
  emit_start();
  return std::nullopt;
}

void completion_call::cancel() {
  if (is_cancelled_) return;
  is_cancelled_ = true;
  for (const auto& c : choices_)
    if (!c.is_finished) engine_.cancel(c.id);
}

void completion_call::abort() {
  is_aborted_ = true;
  cancel();
}

const char* completion_call::finish_name_of(const finish_event& ev) const {
  return finish_name(is_aborted_ && ev.reason == finish_reason::cancelled ? finish_reason::aborted : ev.reason);
}

std::string completion_call::prompt_text(int index) const {
  return detokenize(model_, request_.prompts[static_cast<std::size_t>(index / request_.n)]);
}

void completion_call::emit_start() {
  for (int i = 0; i < int(choices_.size()); ++i) {
    if (request_.echo) choices_[i].text = prompt_text(i);
    if (!request_.stream || is_ws()) continue;
    if (request_.is_chat) {
      emit_chunk(chat_chunk(meta_, i, chat_role_delta(), nullptr, nullptr));
    } else if (request_.echo) {
      emit_({200, sse_event(completion_chunk(meta_, i, choices_[i].text, nullptr, nullptr)), false});
    }
  }
}

namespace {

/// vLLM's stop_reason of a finished choice (choice_result::stop_reason).
json stop_reason_of(const finish_event& ev) {
  if (ev.reason != finish_reason::stop) return nullptr;
  if (!ev.stop_string.empty()) return ev.stop_string;
  return ev.stop_token ? json(*ev.stop_token) : json(nullptr);
}

}  // namespace

void completion_call::emit_chunk(json chunk) {
  // A choice's last chunk (its finish_reason set) says what stopped it, as vLLM's do.
  for (auto& choice : chunk["choices"]) {
    const int index = choice.value("index", 0);
    if (choice.contains("finish_reason") && !choice["finish_reason"].is_null() && index < int(choices_.size()))
      choice["stop_reason"] = choice["finish_reason"] == tool_calls_finish_name ? json(nullptr)
                                                                                 : stop_reason_of(choices_[index].finish);
  }
  if (!shape_) return emit_({200, sse_event(chunk), false});
  if (std::string bytes = shape_->on_chunk(chunk); !bytes.empty()) emit_({200, std::move(bytes), false});
}

reasoning_delta completion_call::split_output(choice_state& c, const std::string& text, bool is_final) {
  if (!c.splitter) return {{}, text};
  reasoning_delta d = c.splitter->push(text);
  if (is_final) {
    const reasoning_delta rest = c.splitter->finish();
    d.reasoning += rest.reasoning;
    d.content += rest.content;
  }
  c.reasoning += d.reasoning;
  return d;
}

json completion_call::logprobs_of(choice_state& c, const std::vector<sampled_token>& tokens) {
  if (!request_.has_logprobs || tokens.empty()) return nullptr;
  const int num_top = request_.num_top_logprobs;
  json out = request_.is_chat || is_ws() ? chat_logprobs_content(model_, c.prev, tokens, num_top)
                              : completion_logprobs(model_, c.prev, tokens, num_top, int(c.text.size()));
  c.prev = tokens.back().token;
  return out;
}

void completion_call::emit_delta(int index, const std::string& output, const std::vector<sampled_token>& logprobs,
                                 const char* finish_reason, const std::vector<token_id>& token_ids) {
  auto& c = choices_[index];
  json lp = logprobs_of(c, logprobs);
  const reasoning_delta split = split_output(c, output, finish_reason != nullptr);
  const std::string& text = split.content;
  if (is_ws()) {
    c.text += text;  // read for tool calls at the end
    // Every token is a message, text or not: index + len(token_ids) is the next index.
    json msg = ws_token(c, text, token_ids, lp, false);
    if (!split.reasoning.empty()) msg["reasoning"] = split.reasoning;
    emit_({200, dump_json(msg), false});
    c.num_sent_tokens += int(token_ids.size());
    return;
  }
  if (!request_.stream) {
    if (!lp.is_null()) {
      if (c.logprobs.is_null()) {
        c.logprobs = lp;
      } else if (request_.is_chat) {
        for (auto& entry : lp) c.logprobs.push_back(std::move(entry));
      } else {
        for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
          for (auto& v : lp[key]) c.logprobs[key].push_back(std::move(v));
      }
    }
    c.text += text;
    return;
  }
  if (!split.reasoning.empty()) {
    // The logprobs ride with the reasoning unless answer text follows in this delta.
    json reasoning_lp = nullptr;
    if (text.empty() && !lp.is_null()) reasoning_lp = {{"content", std::exchange(lp, nullptr)}, {"refusal", nullptr}};
    json delta = {{"reasoning_content", split.reasoning}, {"reasoning", split.reasoning}};
    emit_chunk(chat_chunk(meta_, index, delta, reasoning_lp, nullptr));
    if (text.empty() && !finish_reason) return;
  }
  c.text += text;
  if (c.tool_writer) return emit_tool_delta(index, text, lp, finish_reason);
  if (text.empty() && lp.is_null() && !finish_reason) return;
  if (request_.is_chat) {
    json delta = text.empty() && finish_reason ? json::object() : json{{"content", text}};
    json chat_lp = lp.is_null() ? json(nullptr) : json{{"content", std::move(lp)}, {"refusal", nullptr}};
    emit_chunk(chat_chunk(meta_, index, delta, chat_lp, finish_reason));
  } else {
    emit_chunk(completion_chunk(meta_, index, text, lp, finish_reason));
  }
}

json completion_call::ws_token(choice_state& c, const std::string& text, const std::vector<token_id>& token_ids,
                               const json& logprobs, bool is_final) {
  if (!c.ws_tools) return ws_token_message(ws_id_, text, token_ids, c.num_sent_tokens, logprobs);
  tool_call_stream::delta d = c.ws_tools->push(text);
  if (is_final) {
    tool_call_stream::delta rest = c.ws_tools->finish();
    d.content += rest.content;
    d.calls.insert(d.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  json msg = ws_token_message(ws_id_, d.content, token_ids, c.num_sent_tokens, logprobs);
  if (d.calls.empty()) return msg;
  json calls = json::array();
  for (const auto& piece : d.calls) {
    std::string id;
    if (piece.name) {  // a call's first piece: it gets its id, which done repeats
      id = make_response_id("call_");
      c.ws_call_ids.push_back(id);
    }
    calls.push_back(tool_call_piece(piece.index, id, piece.name, piece.arguments));
  }
  msg["tool_calls"] = std::move(calls);
  return msg;
}

/// Streaming with tools: content and call pieces as the writer finds them.
void completion_call::emit_tool_delta(int index, const std::string& text, const json& logprobs,
                                      const char* finish_reason) {
  auto& writer = *choices_[index].tool_writer;
  for (const auto& chunk : writer.push(text, logprobs)) emit_chunk(chunk);
  if (!finish_reason) return;
  for (const auto& chunk : writer.finish(finish_reason)) emit_chunk(chunk);
}

choice_result completion_call::chat_result(const choice_state& c) const {
  choice_result r{c.text, c.logprobs, finish_name_of(c.finish)};
  r.stop_reason = stop_reason_of(c.finish);
  if (c.splitter) r.reasoning = c.reasoning;
  if (!request_.tools.parses_output()) return r;
  parsed_tool_output parsed = parse_tool_calls(model_.tool_style.format, c.text);
  if (parsed.calls.empty()) return r;
  r.tool_calls = json::array();
  for (const auto& call : parsed.calls)
    r.tool_calls.push_back(tool_call_json(make_response_id("call_"), call.name, call.arguments));
  r.is_content_null = !parsed.content;
  r.text = parsed.content.value_or("");
  r.finish_reason = tool_calls_finish_name;
  r.stop_reason = nullptr;
  return r;
}

void completion_call::on_token(int index, const token_event& ev) {
  if (!emit_ || choices_[index].is_finished) return;
  if (!request_.has_logprobs && ev.text.empty() && !is_ws()) return;
  if (is_paused_ && request_.stream) {
    auto& c = choices_[index];
    c.held_text += ev.text;
    c.held_tokens.insert(c.held_tokens.end(), ev.logprobs.begin(), ev.logprobs.end());
    c.held_ids.insert(c.held_ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    return;
  }
  emit_delta(index, ev.text, ev.logprobs, nullptr, ev.token_ids);
}

void completion_call::flush_held(int index) {
  auto& c = choices_[index];
  if (c.held_text.empty() && c.held_tokens.empty() && c.held_ids.empty()) return;
  const std::string text = std::exchange(c.held_text, {});
  const auto tokens = std::exchange(c.held_tokens, {});
  const auto ids = std::exchange(c.held_ids, {});
  emit_delta(index, text, tokens, nullptr, ids);
}

void completion_call::resume() {
  is_paused_ = false;
  if (!emit_) return;
  for (int i = 0; i < int(choices_.size()); ++i) flush_held(i);
}

void completion_call::on_finish(int index, const finish_event& ev) {
  auto& c = choices_[index];
  if (c.is_finished) return;
  c.is_finished = true;
  c.finish = ev;
  ++num_finished_;
  state_.remove_live_request();
  if (!emit_) return;
  flush_held(index);  // the finish follows every token, paused or not
  if (is_ws()) {
    // Text released at the end (held bytes, held call markup) comes before the done message.
    const reasoning_delta split = split_output(c, ev.text, true);
    c.text += split.content;
    if (c.ws_tools) {
      c.num_sent_tokens = ev.completion_tokens;
      json msg = ws_token(c, split.content, {}, nullptr, true);
      if (!split.reasoning.empty()) msg["reasoning"] = split.reasoning;
      if (!msg["text"].get_ref<const std::string&>().empty() || msg.contains("tool_calls") || msg.contains("reasoning"))
        emit_({200, dump_json(msg), false});
    } else if (!split.content.empty() || !split.reasoning.empty()) {
      json msg = ws_token_message(ws_id_, split.content, {}, ev.completion_tokens, nullptr);
      if (!split.reasoning.empty()) msg["reasoning"] = split.reasoning;
      emit_({200, dump_json(msg), false});
    }
  } else if (ev.reason == finish_reason::error) {
    if (request_.stream) {
      const api_error e = finish_error(ev);
      emit_({200, shape_ ? shape_->on_stream_error(e) : sse_event(error_body(e)), false});
    }
  } else {
    emit_delta(index, ev.text, {}, finish_name_of(ev));
  }
  if (is_done()) finish_all();
}

/// A WebSocket generation (one choice) ends with one done or error message; a chat
/// whose output parsed as tool calls says so there, as HTTP's message does.
void completion_call::emit_ws_end() {
  const choice_state& c = choices_.front();
  const finish_event& ev = c.finish;
  if (ev.reason == finish_reason::error) {
    emit_({200, dump_json(ws_error_message(ws_id_, finish_error(ev), state_.settings().retry_after_s)), true});
    return;
  }
  json msg = ws_done_message(ws_id_, finish_name_of(ev), ev);
  if (const choice_result r = chat_result(c); !r.tool_calls.is_null()) {
    msg["finish_reason"] = r.finish_reason;
    msg["tool_calls"] = r.tool_calls;
    // The ids the token messages gave the calls as they streamed.
    for (std::size_t k = 0; k < msg["tool_calls"].size() && k < c.ws_call_ids.size(); ++k)
      msg["tool_calls"][k]["id"] = c.ws_call_ids[k];
    msg["content"] = r.is_content_null ? json(nullptr) : json(r.text);
  }
  emit_({200, dump_json(msg), true});
}

void completion_call::finish_all() {
  if (is_ws()) return emit_ws_end();
  int num_prompt = 0, num_completion = 0, num_cached = 0, num_drafted = 0, num_accepted = 0;
  for (int i = 0; i < int(choices_.size()); ++i) {
    if (i % request_.n == 0) {  // each prompt once, whatever n
      num_prompt += choices_[i].finish.prompt_tokens;
      num_cached += choices_[i].finish.cached_tokens;
    }
    num_completion += choices_[i].finish.completion_tokens;
    num_drafted += choices_[i].finish.draft_tokens;
    num_accepted += choices_[i].finish.accepted_tokens;
  }
  const json usage = usage_json(num_prompt, num_completion, num_cached, num_drafted, num_accepted);
  if (request_.stream) {
    if (shape_) return emit_({200, shape_->on_stream_end(usage), true});
    std::string tail;
    if (request_.include_usage) tail += sse_event(usage_chunk(meta_, request_.is_chat, usage));
    tail += sse_done;
    emit_({200, std::move(tail), true});
    return;
  }
  std::vector<choice_result> results;
  for (const auto& c : choices_) {
    if (c.finish.reason == finish_reason::error) {
      const api_error e = finish_error(c.finish);
      emit_(shape_ ? shape_->on_error(e) : call_output{e.status, dump_json(error_body(e)), true});
      return;
    }
    if (request_.is_chat) {
      results.push_back(chat_result(c));
    } else {
      results.push_back(choice_result{c.text, c.logprobs, finish_name_of(c.finish)});
      results.back().stop_reason = stop_reason_of(c.finish);
    }
  }
  json body = request_.is_chat ? chat_response(meta_, results, usage) : completion_response(meta_, results, usage);
  emit_(shape_ ? shape_->on_response(body) : call_output{200, dump_json(body), true});
}

}  // namespace inflight::gateway
