#pragma once
/// Splits a Jinja template into text and the tokens inside its tags, applying
/// whitespace control as it goes: `{%-` / `-%}` (and the same on `{{ }}` and `{# #}`)
/// strip the white space before / after a tag; trim_blocks drops the first newline
/// after a block or comment tag; lstrip_blocks drops the spaces and tabs before one
/// on its line (`{%+` / `+%}` turn either off for one tag). Comments are dropped and
/// `{% raw %}...{% endraw %}` becomes text.

#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::jinja {

enum class token_kind {
  text,        ///< template text between tags
  expr_open,   ///< {{
  expr_close,  ///< }}
  stmt_open,   ///< {%
  stmt_close,  ///< %}
  name,        ///< identifier or keyword
  string,      ///< string literal, escapes resolved
  number,      ///< integer or float literal, as written
  op,          ///< operator or punctuation: + - * / // % ** ~ == != < > <= >= = ( ) [ ] { } , . : |
  end,         ///< end of the template
};

struct token {
  token_kind kind = token_kind::end;
  std::string text;
  int line = 1;
  int column = 1;
};

/// transformers' apply_chat_template renders with trim_blocks and lstrip_blocks on, and
/// (Jinja's default) drops a single trailing newline of the template.
struct lex_options {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

/// The tokens of `source`, ending with token_kind::end. Errors (invalid_argument) name
/// the line and column: an unterminated tag, comment or string, or a stray character.
result<std::vector<token>> try_lex(std::string_view source, const lex_options& options = {});

}  // namespace inflight::jinja
