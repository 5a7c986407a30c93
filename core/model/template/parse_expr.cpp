// The expression half of the parser (see parser.hpp for the precedence).
#include <algorithm>
#include <array>
#include <charconv>

#include "core/model/template/builtins.hpp"
#include "core/model/template/parser.hpp"

namespace inflight::jinja {
namespace {

expr_ptr make_binary(const token& at, std::string op, expr_ptr left, expr_ptr right) {
  auto e = make_expr(expr_kind::binary, at);
  e->name = std::move(op);
  e->args.push_back(std::move(left));
  e->args.push_back(std::move(right));
  return e;
}

/// Binary operator levels from parse_compare's operands down to parse_unary's.
constexpr std::array<std::array<std::string_view, 4>, 4> binary_levels{{
    {"+", "-", "", ""},
    {"~", "", "", ""},
    {"*", "/", "//", "%"},
    {"**", "", "", ""},
}};

bool is_comparison(const token& t) {
  static constexpr std::string_view ops[] = {"==", "!=", "<", ">", "<=", ">="};
  if (t.kind != token_kind::op) return false;
  for (auto op : ops) {
    if (t.text == op) return true;
  }
  return false;
}

/// Whether a token can start the single argument of a test written without parentheses
/// (`x is divisibleby 3`, `x is equalto 'a'`).
bool starts_test_argument(const token& t) {
  if (t.kind == token_kind::name) return t.text != "else" && t.text != "or" && t.text != "and";
  if (t.kind == token_kind::string || t.kind == token_kind::number) return true;
  return t.kind == token_kind::op && (t.text == "(" || t.text == "[" || t.text == "{");
}

}  // namespace

result<expr_ptr> parser::parse_expression(bool allow_ternary) {
  if (++depth_ > max_parse_depth) return fail(peek(), "expressions nest deeper than " + std::to_string(max_parse_depth));
  auto node = parse_or();
  while (node && allow_ternary && at_name("if")) {
    const token& at = next();
    auto cond = parse_or();
    if (!cond) return cond;
    auto e = make_expr(expr_kind::ternary, at);
    e->args.push_back(std::move(*node));
    e->args.push_back(std::move(*cond));
    if (skip_name("else")) {
      auto otherwise = parse_expression();
      if (!otherwise) return otherwise;
      e->args.push_back(std::move(*otherwise));
    } else {
      e->args.push_back(nullptr);
    }
    node = std::move(e);
  }
  --depth_;
  return node;
}

result<expr_ptr> parser::parse_tuple_or_expression() {
  const token& at = peek();
  auto first = parse_expression();
  if (!first || !at_op(",")) return first;
  auto tuple = make_expr(expr_kind::list, at);
  tuple->args.push_back(std::move(*first));
  while (skip_op(",")) {
    if (peek().kind == token_kind::stmt_close || peek().kind == token_kind::expr_close || at_op(")")) break;
    auto item = parse_expression();
    if (!item) return item;
    tuple->args.push_back(std::move(*item));
  }
  return tuple;
}

result<expr_ptr> parser::parse_or() {
  auto left = parse_and();
  while (left && at_name("or")) {
    const token& at = next();
    auto right = parse_and();
    if (!right) return right;
    left = make_binary(at, "or", std::move(*left), std::move(*right));
  }
  return left;
}

result<expr_ptr> parser::parse_and() {
  auto left = parse_not();
  while (left && at_name("and")) {
    const token& at = next();
    auto right = parse_not();
    if (!right) return right;
    left = make_binary(at, "and", std::move(*left), std::move(*right));
  }
  return left;
}

result<expr_ptr> parser::parse_not() {
  if (!at_name("not")) return parse_compare();
  if (++depth_ > max_parse_depth) return fail(peek(), "expressions nest deeper than " + std::to_string(max_parse_depth));
  auto e = make_expr(expr_kind::unary, next());
  e->name = "not";
  auto operand = parse_not();
  if (!operand) return operand;
  e->args.push_back(std::move(*operand));
  --depth_;
  return e;
}

result<expr_ptr> parser::parse_compare() {
  auto left = parse_binary_level(0);
  while (left) {
    std::string op;
    const token& at = peek();
    if (is_comparison(at)) {
      op = next().text;
    } else if (at_name("in")) {
      op = next().text;
    } else if (at_name("not") && peek(1).kind == token_kind::name && peek(1).text == "in") {
      next();
      next();
      op = "not in";
    } else {
      break;
    }
    auto right = parse_binary_level(0);
    if (!right) return right;
    left = make_binary(at, op, std::move(*left), std::move(*right));
  }
  return left;
}

result<expr_ptr> parser::parse_binary_level(int level) {
  if (level == static_cast<int>(binary_levels.size())) return parse_unary(true);
  auto left = parse_binary_level(level + 1);
  while (left && peek().kind == token_kind::op) {
    const auto& ops = binary_levels[static_cast<std::size_t>(level)];
    if (std::find(ops.begin(), ops.end(), std::string_view(peek().text)) == ops.end()) break;
    const token& at = next();
    auto right = parse_binary_level(level + 1);
    if (!right) return right;
    left = make_binary(at, at.text, std::move(*left), std::move(*right));
  }
  return left;
}

result<expr_ptr> parser::parse_unary(bool with_filter) {
  result<expr_ptr> node;
  if (at_op("-") || at_op("+")) {
    if (++depth_ > max_parse_depth) return fail(peek(), "expressions nest deeper than " + std::to_string(max_parse_depth));
    auto e = make_expr(expr_kind::unary, peek());
    e->name = next().text;
    auto operand = parse_unary(false);
    if (!operand) return operand;
    e->args.push_back(std::move(*operand));
    --depth_;
    node = std::move(e);
  } else {
    node = parse_primary();
  }
  if (node) node = parse_postfix(std::move(*node));
  if (node && with_filter) node = parse_filters_and_tests(std::move(*node));
  return node;
}

result<expr_ptr> parser::parse_primary() {
  const token& t = peek();
  if (t.kind == token_kind::name) {
    next();
    auto e = make_expr(expr_kind::literal, t);
    if (t.text == "true" || t.text == "True") e->literal = true;
    else if (t.text == "false" || t.text == "False") e->literal = false;
    else if (t.text == "none" || t.text == "None") e->literal = none_t{};
    else e->kind = expr_kind::name, e->name = t.text;
    return e;
  }
  if (t.kind == token_kind::string) {
    std::string text;
    while (peek().kind == token_kind::string) text += next().text;  // 'a' 'b' is 'ab'
    auto e = make_expr(expr_kind::literal, t);
    e->literal = std::move(text);
    return e;
  }
  if (t.kind == token_kind::number) return parse_number(next());
  if (skip_op("(")) {
    if (skip_op(")")) return make_expr(expr_kind::list, t);
    auto inner = parse_tuple_or_expression();
    if (!inner) return inner;
    if (auto ok = expect_op(")"); !ok) return std::unexpected(ok.error());
    return inner;
  }
  if (skip_op("[")) return parse_sequence(t, "]", expr_kind::list);
  if (skip_op("{")) return parse_dict(t);
  return unexpected_token("an expression");
}

result<expr_ptr> parser::parse_number(const token& at) {
  auto e = make_expr(expr_kind::literal, at);
  const char* begin = at.text.data();
  const char* end = begin + at.text.size();
  if (at.text.find_first_of(".eE") == std::string::npos) {
    std::int64_t i = 0;
    if (std::from_chars(begin, end, i).ec != std::errc()) return fail(at, "integer " + at.text + " is out of range");
    e->literal = i;
  } else {
    double d = 0;
    if (std::from_chars(begin, end, d).ec != std::errc()) return fail(at, "number " + at.text + " is out of range");
    e->literal = d;
  }
  return e;
}

result<expr_ptr> parser::parse_sequence(const token& at, std::string_view close, expr_kind kind) {
  auto e = make_expr(kind, at);
  while (!at_op(close)) {
    auto item = parse_expression();
    if (!item) return item;
    e->args.push_back(std::move(*item));
    if (!skip_op(",")) break;
  }
  if (auto ok = expect_op(close); !ok) return std::unexpected(ok.error());
  return e;
}

result<expr_ptr> parser::parse_dict(const token& at) {
  auto e = make_expr(expr_kind::dict, at);
  while (!at_op("}")) {
    auto key = parse_expression();
    if (!key) return key;
    if (auto ok = expect_op(":"); !ok) return std::unexpected(ok.error());
    auto v = parse_expression();
    if (!v) return v;
    e->args.push_back(std::move(*key));
    e->args.push_back(std::move(*v));
    if (!skip_op(",")) break;
  }
  if (auto ok = expect_op("}"); !ok) return std::unexpected(ok.error());
  return e;
}

result<expr_ptr> parser::parse_postfix(expr_ptr node) {
  while (true) {
    if (at_op(".") || at_op("[")) {
      auto sub = parse_subscript(std::move(node));
      if (!sub) return sub;
      node = std::move(*sub);
    } else if (at_op("(")) {
      auto call = make_expr(expr_kind::call, next());
      call->args.push_back(std::move(node));
      if (auto ok = parse_call_args(*call); !ok) return std::unexpected(ok.error());
      node = std::move(call);
    } else {
      return node;
    }
  }
}

result<expr_ptr> parser::parse_subscript(expr_ptr node) {
  const token& at = next();
  if (at.text == ".") {
    const token& attr = next();
    if (attr.kind != token_kind::name && attr.kind != token_kind::number) {
      return fail(attr, "expected an attribute name after '.'");
    }
    auto e = make_expr(attr.kind == token_kind::name ? expr_kind::attribute : expr_kind::subscript, attr);
    e->args.push_back(std::move(node));
    if (attr.kind == token_kind::name) e->name = attr.text;
    else if (auto index = parse_number(attr); index) e->args.push_back(std::move(*index));
    else return index;
    return e;
  }
  auto e = make_expr(expr_kind::subscript, at);
  e->args.push_back(std::move(node));
  if (at_op("]")) return unexpected_token("an index");
  for (int part = 0; part < 3; ++part) {
    if (at_op(":") || at_op("]")) {
      e->args.push_back(nullptr);
    } else {
      auto index = parse_expression();
      if (!index) return index;
      e->args.push_back(std::move(*index));
    }
    if (part == 0 && !at_op(":")) break;  // a plain index
    e->kind = expr_kind::slice;
    if (!skip_op(":")) break;
  }
  while (e->kind == expr_kind::slice && e->args.size() < 4) e->args.push_back(nullptr);
  if (auto ok = expect_op("]"); !ok) return std::unexpected(ok.error());
  return e;
}

result<void> parser::parse_call_args(expr& node) {
  while (!at_op(")")) {
    if (peek().kind == token_kind::name && peek(1).kind == token_kind::op && peek(1).text == "=") {
      std::string key = next().text;
      next();
      auto v = parse_expression();
      if (!v) return std::unexpected(v.error());
      node.kwargs.emplace_back(std::move(key), std::move(*v));
    } else {
      if (!node.kwargs.empty()) return fail(peek(), "a positional argument follows a keyword argument");
      auto v = parse_expression();
      if (!v) return std::unexpected(v.error());
      node.args.push_back(std::move(*v));
    }
    if (!skip_op(",")) break;
  }
  return expect_op(")");
}

result<expr_ptr> parser::parse_filters_and_tests(expr_ptr node) {
  while (true) {
    if (skip_op("|")) {
      if (peek().kind != token_kind::name) return unexpected_token("a filter name");
      auto f = make_expr(expr_kind::filter, peek());
      f->name = next().text;
      f->args.push_back(std::move(node));
      if (skip_op("(")) {
        if (auto ok = parse_call_args(*f); !ok) return std::unexpected(ok.error());
      }
      node = std::move(f);
    } else if (at_name("is")) {
      auto t = parse_test(std::move(node));
      if (!t) return t;
      node = std::move(*t);
    } else if (at_op("(")) {
      auto call = make_expr(expr_kind::call, next());
      call->args.push_back(std::move(node));
      if (auto ok = parse_call_args(*call); !ok) return std::unexpected(ok.error());
      node = std::move(call);
    } else {
      return node;
    }
  }
}

result<expr_ptr> parser::parse_test(expr_ptr subject) {
  next();  // is
  auto t = make_expr(expr_kind::test, peek());
  t->is_negated = skip_name("not");
  if (peek().kind != token_kind::name) return unexpected_token("a test name");
  t->name = next().text;
  t->args.push_back(std::move(subject));
  if (skip_op("(")) {
    if (auto ok = parse_call_args(*t); !ok) return std::unexpected(ok.error());
  } else if (starts_test_argument(peek())) {
    if (at_name("is")) return fail(peek(), "tests cannot be chained with 'is'");
    auto arg = parse_primary();
    if (arg) arg = parse_postfix(std::move(*arg));
    if (!arg) return arg;
    t->args.push_back(std::move(*arg));
  }
  return t;
}

}  // namespace inflight::jinja
