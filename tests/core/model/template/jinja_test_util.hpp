#pragma once
// Shared by the template tests: render a source with a JSON context, or get its error.

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/model/template/jinja_template.hpp"

namespace inflight::jinja::testing {

using ojson = nlohmann::ordered_json;

inline std::string render(std::string_view source, const ojson& context = ojson::object(),
                          const render_limits& limits = {}) {
  auto t = jinja_template::try_parse(source);
  if (!t) FAIL("parse: " << t.error().message);
  auto out = t->try_render(context, limits);
  if (!out) FAIL("render: " << out.error().message);
  return *out;
}

/// The parse or render error of `source`; fails the test when it renders.
inline std::string error_of(std::string_view source, const ojson& context = ojson::object(),
                            const render_limits& limits = {}) {
  auto t = jinja_template::try_parse(source);
  if (!t) return t.error().message;
  auto out = t->try_render(context, limits);
  if (out) FAIL("rendered " << ojson(*out).dump() << " instead of failing");
  return out.error().message;
}

}  // namespace inflight::jinja::testing
