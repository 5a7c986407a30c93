#include "core/model/template/renderer.hpp"

#include "core/model/template/builtins.hpp"
#include "core/model/template/dict_keys.hpp"
#include "core/model/template/text.hpp"
#include "core/model/template/value_json.hpp"

namespace inflight::jinja {

std::unexpected<error> error_at(int line, int column, const std::string& what) {
  return std::unexpected(error{errc::invalid_argument, "template line " + std::to_string(line) + ", column " +
                                                           std::to_string(column) + ": " + what});
}

std::unexpected<error> error_at(const expr& e, const std::string& what) { return error_at(e.line, e.column, what); }

const value* call_args::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

renderer::renderer(const render_limits& limits, std::vector<std::pair<std::string, value>> globals)
    : limits_(limits) {
  frames_.emplace_back();
  for (auto& [name, v] : globals) frames_.front().vars[name] = std::move(v);
}

result<std::string> renderer::render(const program& p) {
  std::string out;
  out_ = &out;
  auto f = exec_body(p.body);
  out_ = nullptr;
  if (!f) return std::unexpected(f.error());
  if (*f != flow::normal) return make_error(errc::invalid_argument, "template: {% break %} or {% continue %} outside a loop");
  return out;
}

result<void> renderer::charge(std::int64_t n) {
  num_work_ += n;
  if (n < 0 || num_work_ > limits_.max_iterations) {
    return make_error(errc::invalid_argument, "the render exceeds " + std::to_string(limits_.max_iterations) +
                                                  " loop iterations, calls and list items");
  }
  return {};
}

result<void> renderer::charge_at(std::int64_t n, int line, int column) {
  auto ok = charge(n);
  if (!ok) return error_at(line, column, ok.error().message);
  return ok;
}

result<void> renderer::check_size(std::size_t num_bytes) const {
  if (num_bytes <= limits_.max_output_bytes) return {};
  return make_error(errc::invalid_argument,
                    "the output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

result<void> renderer::enter(int line, int column) {
  if (++depth_ > limits_.max_depth) {
    --depth_;
    return error_at(line, column, "the render nests deeper than " + std::to_string(limits_.max_depth) + " levels");
  }
  return {};
}

// ---- variables

const value* renderer::lookup(const std::string& name) const {
  for (std::size_t i = frames_.size(); i-- > 0;) {
    if (auto it = frames_[i].vars.find(name); it != frames_[i].vars.end()) return &it->second;
    if (frames_[i].is_macro && i > 0) i = 1;  // next: the globals
  }
  return find_global(name);
}

void renderer::assign(const std::string& name, value v) { frames_.back().vars[name] = std::move(v); }

void renderer::push_frame(bool is_macro) {
  frames_.emplace_back();
  frames_.back().is_macro = is_macro;
}

void renderer::pop_frame() { frames_.pop_back(); }

// ---- statements

result<void> renderer::write(std::string_view text, const stmt& at) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    return error_at(at.line, at.column, "the output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out_->append(text);
  return {};
}

result<std::string> renderer::capture(const std::vector<stmt_ptr>& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  auto f = exec_body(body);
  out_ = saved;
  if (!f) return std::unexpected(f.error());
  return buffer;
}

result<flow> renderer::exec_body(const std::vector<stmt_ptr>& body) {
  for (const stmt_ptr& s : body) {
    auto f = exec(*s);
    if (!f || *f != flow::normal) return f;
  }
  return flow::normal;
}

result<flow> renderer::exec(const stmt& s) {
  switch (s.kind) {
    case stmt_kind::text:
      if (auto ok = write(s.text, s); !ok) return std::unexpected(ok.error());
      return flow::normal;
    case stmt_kind::output: {
      auto v = eval(*s.value);
      if (!v) return std::unexpected(v.error());
      if (auto ok = write(to_text(*v), s); !ok) return std::unexpected(ok.error());
      return flow::normal;
    }
    case stmt_kind::if_: return exec_if(s);
    case stmt_kind::for_: return exec_for(s);
    case stmt_kind::set:
    case stmt_kind::set_block:
    case stmt_kind::macro:
      if (auto ok = exec_set(s); !ok) return std::unexpected(ok.error());
      return flow::normal;
    case stmt_kind::block: return exec_body(s.body);
    case stmt_kind::break_: return flow::break_loop;
    case stmt_kind::continue_: return flow::continue_loop;
  }
  return flow::normal;
}

result<flow> renderer::exec_if(const stmt& s) {
  auto cond = eval(*s.value);
  if (!cond) return std::unexpected(cond.error());
  if (auto ok = enter(s.line, s.column); !ok) return std::unexpected(ok.error());
  auto f = exec_body(cond->truthy() ? s.body : s.else_body);
  leave();
  return f;
}

namespace {

/// What a for loop iterates: a list's items, a dict's keys, a string's characters.
result<std::vector<value>> iteration_items(const value& v, const stmt& at) {
  if (v.is_list()) return v.as_list();
  if (v.is_undefined()) return std::vector<value>{};
  std::vector<value> items;
  if (v.is_dict()) {
    for (const auto& [k, unused] : v.as_dict()->items) items.push_back(decode_dict_key(k));
    return items;
  }
  if (v.is_string()) {
    for (std::string& c : split_characters(v.as_string())) items.emplace_back(std::move(c));
    return items;
  }
  return error_at(at.line, at.column, "cannot iterate over " + std::string(v.type_name()));
}

value loop_info(const std::vector<value>& items, std::size_t i) {
  const auto n = static_cast<std::int64_t>(items.size());
  const auto k = static_cast<std::int64_t>(i);
  return make_dict({{"index", k + 1},
                    {"index0", k},
                    {"revindex", n - k},
                    {"revindex0", n - k - 1},
                    {"first", i == 0},
                    {"last", k == n - 1},
                    {"length", n},
                    {"depth", 1},
                    {"depth0", 0},
                    {"previtem", i > 0 ? items[i - 1] : value()},
                    {"nextitem", k + 1 < n ? items[i + 1] : value()}});
}

}  // namespace

result<flow> renderer::exec_for(const stmt& s) {
  auto iterable = eval(*s.value);
  if (!iterable) return std::unexpected(iterable.error());
  auto all = iteration_items(*iterable, s);
  if (!all) return std::unexpected(all.error());
  if (auto ok = enter(s.line, s.column); !ok) return std::unexpected(ok.error());
  push_frame(false);
  std::vector<value> items;
  for (value& item : *all) {
    if (s.filter) {
      if (auto ok = charge_at(1, s.line, s.column); !ok) return std::unexpected(ok.error());
      if (auto ok = assign_targets(s, item); !ok) return std::unexpected(ok.error());
      auto keep = eval(*s.filter);
      if (!keep) return std::unexpected(keep.error());
      if (!keep->truthy()) continue;
    }
    items.push_back(std::move(item));
  }
  auto f = run_loop(s, items);
  pop_frame();
  leave();
  return f;
}

result<flow> renderer::run_loop(const stmt& s, const std::vector<value>& items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (auto ok = charge_at(1, s.line, s.column); !ok) return std::unexpected(ok.error());
    assign("loop", loop_info(items, i));
    if (auto ok = assign_targets(s, items[i]); !ok) return std::unexpected(ok.error());
    auto f = exec_body(s.body);
    if (!f) return f;
    if (*f == flow::break_loop) break;
  }
  if (items.empty()) return exec_body(s.else_body);
  return flow::normal;
}

result<void> renderer::assign_targets(const stmt& s, value v) {
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return {};
  }
  if (!v.is_list() || v.as_list().size() != s.targets.size()) {
    return error_at(s.line, s.column, "cannot unpack a " + std::string(v.type_name()) + " into " +
                                          std::to_string(s.targets.size()) + " variables");
  }
  for (std::size_t i = 0; i < s.targets.size(); ++i) assign(s.targets[i], v.as_list()[i]);
  return {};
}

result<void> renderer::exec_set(const stmt& s) {
  if (s.kind == stmt_kind::macro) {
    auto f = std::make_shared<function>();
    f->name = s.name;
    f->macro = &s;
    assign(s.name, value(function_ptr(std::move(f))));
    return {};
  }
  result<value> v = value();
  if (s.kind == stmt_kind::set_block) {
    auto text = capture(s.body);
    if (!text) return std::unexpected(text.error());
    v = std::move(*text);
  } else {
    v = eval(*s.value);
  }
  if (!v) return std::unexpected(v.error());
  if (s.attribute.empty()) return assign_targets(s, std::move(*v));
  const value* target = lookup(s.targets[0]);
  if (!target || !target->is_dict() || !target->as_dict()->is_namespace) {
    return error_at(s.line, s.column, "cannot set an attribute of '" + s.targets[0] + "': it is not a namespace");
  }
  if (v->has_namespace()) return error_at(s.line, s.column, "a namespace cannot hold a namespace");
  if (v->nesting() >= max_value_nesting) return error_at(s.line, s.column, "the value nests too deeply");
  target->as_dict()->set(s.attribute, std::move(*v));
  return {};
}

}  // namespace inflight::jinja
