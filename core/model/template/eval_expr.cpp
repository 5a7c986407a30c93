// The expression half of the renderer: names, literals, subscripts, calls, filters,
// tests and operators (the arithmetic itself is in operators.cpp).
#include "core/model/template/dict_keys.hpp"
#include "core/model/template/builtins.hpp"
#include "core/model/template/operators.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/value_json.hpp"

namespace inflight::jinja {
namespace {

/// jinja2's UndefinedError for `x.attr` / `x[i]` when x itself is undefined.
std::unexpected<error> undefined_error(const expr& object) {
  if (object.kind == expr_kind::name) return error_at(object, "'" + object.name + "' is undefined");
  if (object.kind == expr_kind::attribute) return error_at(object, "'" + object.name + "' is undefined");
  return error_at(object, "the value is undefined");
}

}  // namespace

result<value> renderer::eval(const expr& e) {
  if (e.kind == expr_kind::literal) return e.literal;
  if (e.kind == expr_kind::name) return eval_name(e);
  if (auto ok = enter(e.line, e.column); !ok) return std::unexpected(ok.error());
  result<value> v = value();
  switch (e.kind) {
    case expr_kind::list: v = eval_list(e); break;
    case expr_kind::dict: v = eval_dict(e); break;
    case expr_kind::attribute: {
      v = eval(*e.args[0]);
      if (v && v->is_undefined()) v = undefined_error(*e.args[0]);
      else if (v) v = get_attribute(*v, e.name);
      break;
    }
    case expr_kind::subscript: v = eval_subscript(e); break;
    case expr_kind::slice: v = eval_slice(e); break;
    case expr_kind::call: v = eval_call(e); break;
    case expr_kind::filter: v = eval_filter(e); break;
    case expr_kind::test: v = eval_test(e); break;
    case expr_kind::unary: v = eval_unary(e); break;
    case expr_kind::binary: v = eval_binary(e); break;
    case expr_kind::ternary: {
      auto cond = eval(*e.args[1]);
      if (!cond) return cond;
      const expr* branch = cond->truthy() ? e.args[0].get() : e.args[2].get();
      v = branch ? eval(*branch) : value();
      break;
    }
    default: break;
  }
  leave();
  return v;
}

result<value> renderer::eval_name(const expr& e) {
  const value* v = lookup(e.name);
  return v ? *v : value();
}

result<value> renderer::eval_list(const expr& e) {
  if (auto ok = charge_at(static_cast<std::int64_t>(e.args.size()), e.line, e.column); !ok) {
    return std::unexpected(ok.error());
  }
  std::vector<value> items;
  items.reserve(e.args.size());
  for (const expr_ptr& item : e.args) {
    auto v = eval(*item);
    if (!v) return v;
    if (v->nesting() >= max_value_nesting) return error_at(e, "the list nests too deeply");
    items.push_back(std::move(*v));
  }
  return value(std::move(items));
}

result<value> renderer::eval_dict(const expr& e) {
  if (auto ok = charge_at(static_cast<std::int64_t>(e.args.size() / 2), e.line, e.column); !ok) {
    return std::unexpected(ok.error());
  }
  auto d = std::make_shared<dict>();
  for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
    auto key = eval(*e.args[i]);
    if (!key) return key;
    const auto stored = encode_dict_key(*key);
    if (!stored) return error_at(*e.args[i], "a " + std::string(key->type_name()) + " cannot be a dict key");
    auto v = eval(*e.args[i + 1]);
    if (!v) return v;
    if (v->nesting() >= max_value_nesting) return error_at(e, "the dict nests too deeply");
    d->set(*stored, std::move(*v));
  }
  return value(std::move(d));
}

result<value> renderer::eval_subscript(const expr& e) {
  auto object = eval(*e.args[0]);
  if (!object) return object;
  if (object->is_undefined()) return undefined_error(*e.args[0]);
  auto index = eval(*e.args[1]);
  if (!index) return index;
  return get_item(*object, *index);
}

result<value> renderer::eval_slice(const expr& e) {
  auto object = eval(*e.args[0]);
  if (!object) return object;
  std::optional<std::int64_t> bounds[3];
  for (std::size_t i = 0; i < 3; ++i) {
    if (!e.args[i + 1]) continue;
    auto b = eval(*e.args[i + 1]);
    if (!b) return b;
    if (b->is_none()) continue;
    if (!b->is_int()) return error_at(*e.args[i + 1], "slice bounds must be integers");
    bounds[i] = b->as_int();
  }
  if (bounds[2] && *bounds[2] == 0) return error_at(e, "slice step cannot be zero");
  return slice_value(*object, bounds[0], bounds[1], bounds[2].value_or(1));
}

result<call_args> renderer::eval_args(const expr& e, std::size_t first) {
  call_args args;
  for (std::size_t i = first; i < e.args.size(); ++i) {
    auto v = eval(*e.args[i]);
    if (!v) return std::unexpected(v.error());
    args.positional.push_back(std::move(*v));
  }
  for (const auto& [name, arg] : e.kwargs) {
    auto v = eval(*arg);
    if (!v) return std::unexpected(v.error());
    args.keyword.emplace_back(name, std::move(*v));
  }
  return args;
}

result<value> renderer::eval_call(const expr& e) {
  const expr& callee = *e.args[0];
  auto args = eval_args(e, 1);
  if (!args) return std::unexpected(args.error());
  result<value> f = value();
  if (callee.kind == expr_kind::attribute) {
    auto object = eval(*callee.args[0]);
    if (!object) return object;
    auto r = call_method(*this, *object, callee.name, *args);
    if (r || r.error().code != errc::not_found) {
      if (!r) return error_at(callee, r.error().message);
      return r;
    }
    f = get_attribute(*object, callee.name);
    if (!f->is_function()) {
      return error_at(callee, "a " + std::string(object->type_name()) + " has no method '" + callee.name + "'");
    }
  } else {
    f = eval(callee);
    if (!f) return f;
  }
  if (!f->is_function()) {
    const std::string what = callee.kind == expr_kind::name ? "'" + callee.name + "'" : "the value";
    return error_at(callee, what + (f->is_undefined() ? " is undefined" : " is not callable"));
  }
  return call_function(f->as_function(), *args, e);
}

result<value> renderer::call_function(const function& f, const call_args& args, const expr& at) {
  if (f.macro) return call_macro(*f.macro, args, at);
  auto r = call_builtin(*this, f.builtin, args);
  if (!r && f.builtin != builtin_function::raise_exception) return error_at(at, r.error().message);
  return r;
}

result<value> renderer::call_macro(const stmt& macro, const call_args& args, const expr& at) {
  if (auto ok = charge_at(1, at.line, at.column); !ok) return std::unexpected(ok.error());
  if (auto ok = enter(at.line, at.column); !ok) return std::unexpected(ok.error());
  push_frame(true);
  if (auto ok = bind_params(macro, args, at); !ok) return std::unexpected(ok.error());
  auto text = capture(macro.body);
  pop_frame();
  leave();
  if (!text) return std::unexpected(text.error());
  return value(std::move(*text));
}

result<void> renderer::bind_params(const stmt& macro, const call_args& args, const expr& at) {
  if (args.positional.size() > macro.params.size()) {
    return error_at(at, "macro '" + macro.name + "' takes " + std::to_string(macro.params.size()) + " arguments");
  }
  for (const auto& [name, unused] : args.keyword) {
    bool is_param = false;
    for (const auto& p : macro.params) is_param = is_param || p.first == name;
    if (!is_param) return error_at(at, "macro '" + macro.name + "' has no parameter '" + name + "'");
  }
  for (std::size_t i = 0; i < macro.params.size(); ++i) {
    const auto& [name, default_value] = macro.params[i];
    if (const value* v = args.get(i, name)) {
      assign(name, *v);
    } else if (default_value) {
      auto v = eval(*default_value);
      if (!v) return std::unexpected(v.error());
      assign(name, std::move(*v));
    } else {
      assign(name, value());
    }
  }
  return {};
}

result<value> renderer::eval_filter(const expr& e) {
  auto subject = eval(*e.args[0]);
  if (!subject) return subject;
  auto args = eval_args(e, 1);
  if (!args) return std::unexpected(args.error());
  auto r = apply_filter(*this, e.name, *subject, *args);
  if (!r) return error_at(e, r.error().message);
  return r;
}

result<value> renderer::eval_test(const expr& e) {
  auto subject = eval(*e.args[0]);
  if (!subject) return subject;
  auto args = eval_args(e, 1);
  if (!args) return std::unexpected(args.error());
  auto r = apply_test(e.name, *subject, *args);
  if (!r) return error_at(e, r.error().message);
  return value(*r != e.is_negated);
}

result<value> renderer::eval_unary(const expr& e) {
  auto operand = eval(*e.args[0]);
  if (!operand) return operand;
  if (e.name == "not") return value(!operand->truthy());
  auto r = e.name == "-" ? negate(*operand) : positive(*operand);
  if (!r) return error_at(e, r.error().message);
  return r;
}

result<value> renderer::eval_binary(const expr& e) {
  auto left = eval(*e.args[0]);
  if (!left) return left;
  if (e.name == "and") return left->truthy() ? eval(*e.args[1]) : left;
  if (e.name == "or") return left->truthy() ? left : eval(*e.args[1]);
  auto right = eval(*e.args[1]);
  if (!right) return right;
  auto r = binary_operation(*this, e.name, *left, *right);
  if (!r) return error_at(e, r.error().message);
  return r;
}

}  // namespace inflight::jinja
