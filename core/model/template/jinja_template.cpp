#include "core/model/template/jinja_template.hpp"

#include "core/model/template/ast.hpp"
#include "core/model/template/parser.hpp"
#include "core/model/template/value_json.hpp"

namespace inflight::jinja {

result<jinja_template> jinja_template::try_parse(std::string_view source, const lex_options& options) {
  auto tokens = try_lex(source, options);
  if (!tokens) return std::unexpected(tokens.error());
  auto p = jinja::try_parse(*tokens);
  if (!p) return std::unexpected(p.error());
  return jinja_template(std::make_shared<const program>(std::move(*p)));
}

result<std::string> jinja_template::try_render(const nlohmann::ordered_json& context,
                                               const render_limits& limits) const {
  if (!context.is_object()) return make_error(errc::invalid_argument, "template context must be a JSON object");
  std::vector<std::pair<std::string, value>> variables;
  for (auto it = context.begin(); it != context.end(); ++it) {
    auto v = try_from_json(it.value());
    if (!v) return std::unexpected(v.error());
    variables.emplace_back(it.key(), std::move(*v));
  }
  return try_render(std::move(variables), limits);
}

result<std::string> jinja_template::try_render(std::vector<std::pair<std::string, value>> variables,
                                               const render_limits& limits) const {
  renderer r(limits, std::move(variables));
  return r.render(*program_);
}

}  // namespace inflight::jinja
