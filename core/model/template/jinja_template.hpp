#pragma once
/// A Jinja template engine for the subset chat templates use (see docs/http-api.md,
/// "Chat templates"): parse once, render many times with a JSON context. Parse errors
/// and render errors (raise_exception, type errors, the limits) are error values that
/// say where; nothing throws, loops and recursion are bounded.
///
///   auto t = jinja_template::try_parse("{% for m in messages %}{{ m.role }}{% endfor %}");
///   auto text = t->try_render({{"messages", {{{"role", "user"}}}}});

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/model/template/lexer.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/value.hpp"

namespace inflight::jinja {

struct program;

class jinja_template {
 public:
  /// Parses `source` (with trim_blocks and lstrip_blocks by default, as transformers
  /// renders chat templates). Errors (invalid_argument) name the line and column.
  static result<jinja_template> try_parse(std::string_view source, const lex_options& options = {});

  /// Renders with each member of the JSON object `context` as a variable. Errors
  /// (invalid_argument): the message of raise_exception(message) as it is; other
  /// failures with the template line and column.
  result<std::string> try_render(const nlohmann::ordered_json& context, const render_limits& limits = {}) const;
  /// Renders with the given variables.
  result<std::string> try_render(std::vector<std::pair<std::string, value>> variables,
                                 const render_limits& limits = {}) const;

 private:
  explicit jinja_template(std::shared_ptr<const program> p) : program_(std::move(p)) {}
  std::shared_ptr<const program> program_;  ///< shared: copies of a template are cheap
};

}  // namespace inflight::jinja
