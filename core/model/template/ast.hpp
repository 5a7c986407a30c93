#pragma once
/// The parsed form of a template: statements (text, output, if, for, set, macro, ...)
/// holding expressions. One node type for each, told apart by its kind; the children
/// each kind uses are listed beside it.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/model/template/value.hpp"

namespace inflight::jinja {

enum class expr_kind {
  literal,    ///< `literal`
  list,       ///< args: the items ([a, b] and (a, b))
  dict,       ///< args: key, value, key, value, ...
  name,       ///< `name`
  attribute,  ///< args[0].`name`
  subscript,  ///< args[0][args[1]]
  slice,      ///< args[0][args[1]:args[2]:args[3]], absent parts null
  call,       ///< args[0](args[1...], kwargs)
  filter,     ///< args[0] | `name`(args[1...], kwargs)
  test,       ///< args[0] is [not] `name`(args[1...], kwargs); `is_negated`
  unary,      ///< `name` ("not", "-", "+") args[0]
  binary,     ///< args[0] `name` args[1]: or and == != < > <= >= in "not in" + - * / // % ** ~
  ternary,    ///< args[0] if args[1] else args[2] (null: undefined)
};

struct expr;
using expr_ptr = std::unique_ptr<expr>;

struct expr {
  expr_kind kind = expr_kind::literal;
  int line = 0, column = 0;
  value literal;
  std::string name;
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
  bool is_negated = false;
};

enum class stmt_kind {
  text,       ///< `text`
  output,     ///< {{ value }}
  if_,        ///< {% if value %} body {% else %} else_body {% endif %} (elif: an if in else_body)
  for_,       ///< {% for targets in value if filter %} body {% else %} else_body {% endfor %}
  set,        ///< {% set targets = value %} / {% set targets[0].attribute = value %}
  set_block,  ///< {% set targets[0] %} body {% endset %}
  macro,      ///< {% macro name(params) %} body {% endmacro %}
  block,      ///< {% generation %} body {% endgeneration %}: rendered in place
  break_,     ///< {% break %}
  continue_,  ///< {% continue %}
};

struct stmt;
using stmt_ptr = std::unique_ptr<stmt>;

struct stmt {
  stmt_kind kind = stmt_kind::text;
  int line = 0, column = 0;
  std::string text;
  expr_ptr value;
  expr_ptr filter;
  std::vector<std::string> targets;
  std::string attribute;
  std::string name;
  std::vector<std::pair<std::string, expr_ptr>> params;  ///< macro parameters, default null when none
  std::vector<stmt_ptr> body, else_body;
};

struct program {
  std::vector<stmt_ptr> body;
};

}  // namespace inflight::jinja
