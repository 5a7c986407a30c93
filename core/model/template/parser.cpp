#include "core/model/template/parser.hpp"

#include <algorithm>

namespace inflight::jinja {
namespace {

stmt_ptr make_stmt(stmt_kind kind, const token& at) {
  auto s = std::make_unique<stmt>();
  s->kind = kind;
  s->line = at.line;
  s->column = at.column;
  return s;
}

std::string quoted(std::string_view s) {
  std::string out(1, '\'');
  out.append(s);
  out += '\'';
  return out;
}

std::string describe(const token& t) {
  switch (t.kind) {
    case token_kind::text: return "template text";
    case token_kind::expr_open: return "'{{'";
    case token_kind::expr_close: return "'}}'";
    case token_kind::stmt_open: return "'{%'";
    case token_kind::stmt_close: return "'%}'";
    case token_kind::string: return "a string";
    case token_kind::number: return "'" + t.text + "'";
    case token_kind::end: return "the end of the template";
    default: return "'" + t.text + "'";
  }
}

}  // namespace

expr_ptr make_expr(expr_kind kind, const token& at) {
  auto e = std::make_unique<expr>();
  e->kind = kind;
  e->line = at.line;
  e->column = at.column;
  return e;
}

result<program> try_parse(const std::vector<token>& tokens) { return parser(tokens).parse_program(); }

// ---- token cursor

const token& parser::peek(std::size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const token& parser::next() {
  const token& t = peek();
  if (pos_ + 1 < tokens_.size()) ++pos_;
  return t;
}

bool parser::at_op(std::string_view op) const { return peek().kind == token_kind::op && peek().text == op; }
bool parser::at_name(std::string_view name) const { return peek().kind == token_kind::name && peek().text == name; }

bool parser::skip_op(std::string_view op) {
  if (!at_op(op)) return false;
  next();
  return true;
}

bool parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

result<void> parser::expect_op(std::string_view op) {
  if (!skip_op(op)) return unexpected_token(quoted(op));
  return {};
}

result<void> parser::expect_close() {
  if (peek().kind != token_kind::stmt_close) return unexpected_token("'%}'");
  next();
  return {};
}

std::unexpected<error> parser::fail(const token& at, const std::string& what) const {
  return std::unexpected(error{errc::invalid_argument, "template line " + std::to_string(at.line) + ", column " +
                                                           std::to_string(at.column) + ": " + what});
}

std::unexpected<error> parser::unexpected_token(const std::string& expected) const {
  return fail(peek(), "expected " + expected + ", found " + describe(peek()));
}

// ---- statements

result<program> parser::parse_program() {
  auto body = parse_body({}, "");
  if (!body) return std::unexpected(body.error());
  return program{std::move(*body)};
}

result<std::vector<stmt_ptr>> parser::parse_body(stop_names stops, std::string_view opener) {
  if (++depth_ > max_parse_depth) return fail(peek(), "blocks nest deeper than " + std::to_string(max_parse_depth));
  std::vector<stmt_ptr> body;
  while (true) {
    const token& t = peek();
    if (t.kind == token_kind::end) {
      if (stops.size() == 0) break;
      return fail(t, "expected '" + std::string(*(stops.end() - 1)) + "' to close " + std::string(opener) +
                         ", found the end of the template");
    }
    if (t.kind == token_kind::stmt_open && peek(1).kind == token_kind::name &&
        std::find(stops.begin(), stops.end(), peek(1).text) != stops.end()) {
      break;
    }
    next();
    result<stmt_ptr> s = make_stmt(stmt_kind::text, t);
    if (t.kind == token_kind::text) {
      (*s)->text = t.text;
    } else if (t.kind == token_kind::expr_open) {
      (*s)->kind = stmt_kind::output;
      auto e = parse_expression();
      if (!e) return std::unexpected(e.error());
      if (peek().kind != token_kind::expr_close) return unexpected_token("'}}'");
      next();
      (*s)->value = std::move(*e);
    } else if (t.kind == token_kind::stmt_open) {
      s = parse_tag();
    } else {
      return fail(t, "unexpected " + describe(t));
    }
    if (!s) return std::unexpected(s.error());
    body.push_back(std::move(*s));
  }
  --depth_;
  return body;
}

result<stmt_ptr> parser::parse_tag() {
  if (peek().kind != token_kind::name) return unexpected_token("a tag name");
  const token& at = next();
  const std::string& name = at.text;
  if (name == "if") return parse_if(at);
  if (name == "for") return parse_for(at);
  if (name == "set") return parse_set(at);
  if (name == "macro") return parse_macro(at);
  if (name == "generation") return parse_block(at, "endgeneration");
  if (name == "break" || name == "continue") {
    auto s = make_stmt(name == "break" ? stmt_kind::break_ : stmt_kind::continue_, at);
    if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
    return s;
  }
  if (name.starts_with("end") || name == "else" || name == "elif") return fail(at, "unexpected '" + name + "'");
  return fail(at, "unknown tag '" + name + "'");
}

result<void> parser::parse_end(std::string_view name) {
  if (peek().kind != token_kind::stmt_open) return unexpected_token("'{% " + std::string(name) + " %}'");
  next();
  if (!skip_name(name)) return unexpected_token(quoted(name));
  if (name == "endmacro" && peek().kind == token_kind::name) next();  // {% endmacro name %}
  return expect_close();
}

result<stmt_ptr> parser::parse_if(const token& at) {
  auto s = make_stmt(stmt_kind::if_, at);
  auto cond = parse_expression();
  if (!cond) return std::unexpected(cond.error());
  s->value = std::move(*cond);
  if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
  auto body = parse_body({"elif", "else", "endif"}, "the 'if' at line " + std::to_string(at.line));
  if (!body) return std::unexpected(body.error());
  s->body = std::move(*body);
  next();  // {%
  const token& branch = next();
  if (branch.text == "elif") {
    auto nested = parse_if(branch);
    if (!nested) return nested;
    s->else_body.push_back(std::move(*nested));
    return s;
  }
  if (branch.text == "else") {
    if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
    auto else_body = parse_body({"endif"}, "the 'if' at line " + std::to_string(at.line));
    if (!else_body) return std::unexpected(else_body.error());
    s->else_body = std::move(*else_body);
    if (auto ok = parse_end("endif"); !ok) return std::unexpected(ok.error());
    return s;
  }
  if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
  return s;
}

result<std::vector<std::string>> parser::parse_targets() {
  std::vector<std::string> targets;
  do {
    if (peek().kind != token_kind::name) return unexpected_token("a variable name");
    targets.push_back(next().text);
  } while (skip_op(","));
  return targets;
}

result<stmt_ptr> parser::parse_for(const token& at) {
  auto s = make_stmt(stmt_kind::for_, at);
  auto targets = parse_targets();
  if (!targets) return std::unexpected(targets.error());
  s->targets = std::move(*targets);
  if (!skip_name("in")) return unexpected_token("'in'");
  auto iterable = parse_expression(false);
  if (!iterable) return std::unexpected(iterable.error());
  s->value = std::move(*iterable);
  if (skip_name("if")) {
    auto filter = parse_expression();
    if (!filter) return std::unexpected(filter.error());
    s->filter = std::move(*filter);
  }
  if (at_name("recursive")) return fail(peek(), "recursive loops are not supported");
  if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
  const std::string opener = "the 'for' at line " + std::to_string(at.line);
  auto body = parse_body({"else", "endfor"}, opener);
  if (!body) return std::unexpected(body.error());
  s->body = std::move(*body);
  if (peek(1).text == "else") {
    next();
    next();
    if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
    auto else_body = parse_body({"endfor"}, opener);
    if (!else_body) return std::unexpected(else_body.error());
    s->else_body = std::move(*else_body);
  }
  if (auto ok = parse_end("endfor"); !ok) return std::unexpected(ok.error());
  return s;
}

result<stmt_ptr> parser::parse_set(const token& at) {
  auto s = make_stmt(stmt_kind::set, at);
  if (peek().kind == token_kind::name && peek(1).kind == token_kind::op && peek(1).text == ".") {
    s->targets.push_back(next().text);
    next();
    if (peek().kind != token_kind::name) return unexpected_token("an attribute name");
    s->attribute = next().text;
  } else {
    auto targets = parse_targets();
    if (!targets) return std::unexpected(targets.error());
    s->targets = std::move(*targets);
  }
  if (skip_op("=")) {
    auto v = parse_tuple_or_expression();
    if (!v) return std::unexpected(v.error());
    s->value = std::move(*v);
    if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
    return s;
  }
  if (s->targets.size() != 1 || !s->attribute.empty()) return unexpected_token("'='");
  s->kind = stmt_kind::set_block;
  if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
  auto body = parse_body({"endset"}, "the 'set' at line " + std::to_string(at.line));
  if (!body) return std::unexpected(body.error());
  s->body = std::move(*body);
  if (auto ok = parse_end("endset"); !ok) return std::unexpected(ok.error());
  return s;
}

result<stmt_ptr> parser::parse_macro(const token& at) {
  auto s = make_stmt(stmt_kind::macro, at);
  if (peek().kind != token_kind::name) return unexpected_token("a macro name");
  s->name = next().text;
  if (auto ok = expect_op("("); !ok) return std::unexpected(ok.error());
  while (!at_op(")")) {
    if (peek().kind != token_kind::name) return unexpected_token("a parameter name");
    std::pair<std::string, expr_ptr> param{next().text, nullptr};
    if (skip_op("=")) {
      auto def = parse_expression();
      if (!def) return std::unexpected(def.error());
      param.second = std::move(*def);
    }
    s->params.push_back(std::move(param));
    if (!skip_op(",")) break;
  }
  if (auto ok = expect_op(")"); !ok) return std::unexpected(ok.error());
  auto body = parse_block(at, "endmacro");
  if (!body) return body;
  s->body = std::move((*body)->body);
  return s;
}

result<stmt_ptr> parser::parse_block(const token& at, std::string_view end_name) {
  auto s = make_stmt(stmt_kind::block, at);
  if (auto ok = expect_close(); !ok) return std::unexpected(ok.error());
  auto body = parse_body({end_name}, "the '" + at.text + "' at line " + std::to_string(at.line));
  if (!body) return std::unexpected(body.error());
  s->body = std::move(*body);
  if (auto ok = parse_end(end_name); !ok) return std::unexpected(ok.error());
  return s;
}

}  // namespace inflight::jinja
