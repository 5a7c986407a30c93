#pragma once
/// Recursive-descent parser from lexer tokens to the statement tree, with Jinja's
/// operator precedence (low to high): `x if c else y`, or, and, not, comparisons and
/// in, + -, ~, * / // %, **, unary - +, then postfix `.attr` `[i]` `[a:b:c]` `(args)`,
/// filters `| f(args)` and tests `is [not] t(args)`, which bind tightest:
/// `a + b | trim` trims b, `not x is none` negates the test.

#include <initializer_list>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/template/ast.hpp"
#include "core/model/template/lexer.hpp"

namespace inflight::jinja {

/// How deeply expressions and blocks may nest: bounds the parser's and the renderer's recursion.
constexpr int max_parse_depth = 100;

/// The program of a token list from try_lex. Errors (invalid_argument) name the line
/// and column: "template line 3, column 7: expected 'endfor', found the end of the template".
result<program> try_parse(const std::vector<token>& tokens);

/// The parser's state; its statement methods live in parser.cpp, the expression methods
/// in parse_expr.cpp.
class parser {
 public:
  explicit parser(const std::vector<token>& tokens) : tokens_(tokens) {}

  result<program> parse_program();

 private:
  using stop_names = std::initializer_list<std::string_view>;

  // statements (parser.cpp)
  result<std::vector<stmt_ptr>> parse_body(stop_names stops, std::string_view opener);
  result<stmt_ptr> parse_tag();
  result<stmt_ptr> parse_if(const token& at);
  result<stmt_ptr> parse_for(const token& at);
  result<stmt_ptr> parse_set(const token& at);
  result<stmt_ptr> parse_macro(const token& at);
  result<stmt_ptr> parse_block(const token& at, std::string_view end_name);
  result<void> parse_end(std::string_view name);
  result<std::vector<std::string>> parse_targets();

  // expressions (parse_expr.cpp)
  result<expr_ptr> parse_expression(bool allow_ternary = true);
  result<expr_ptr> parse_tuple_or_expression();
  result<expr_ptr> parse_or();
  result<expr_ptr> parse_and();
  result<expr_ptr> parse_not();
  result<expr_ptr> parse_compare();
  result<expr_ptr> parse_binary_level(int level);
  result<expr_ptr> parse_unary(bool with_filter);
  result<expr_ptr> parse_primary();
  result<expr_ptr> parse_postfix(expr_ptr node);
  result<expr_ptr> parse_filters_and_tests(expr_ptr node);
  result<expr_ptr> parse_subscript(expr_ptr node);
  result<expr_ptr> parse_sequence(const token& at, std::string_view close, expr_kind kind);
  result<expr_ptr> parse_dict(const token& at);
  result<expr_ptr> parse_number(const token& at);
  result<void> parse_call_args(expr& node);
  result<expr_ptr> parse_test(expr_ptr subject);

  // token cursor
  const token& peek(std::size_t ahead = 0) const;
  const token& next();
  bool at_op(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  result<void> expect_op(std::string_view op);
  result<void> expect_close();
  std::unexpected<error> fail(const token& at, const std::string& what) const;
  std::unexpected<error> unexpected_token(const std::string& expected) const;

  const std::vector<token>& tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;  ///< current nesting of blocks and expressions
};

/// An expression node of `kind` at the position of `at`.
expr_ptr make_expr(expr_kind kind, const token& at);

}  // namespace inflight::jinja
