#pragma once
/// Renders a parsed template: runs its statements against a context of variables,
/// evaluating expressions, filters, tests, methods and calls, inside the limits a
/// render may use (output size, iterations, nesting depth). Every failure is an error
/// value; nothing throws.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/template/ast.hpp"
#include "core/model/template/value.hpp"

namespace inflight::jinja {

/// The bounds of one render; hitting one is an error (invalid_argument) that names it.
struct render_limits {
  std::size_t max_output_bytes = std::size_t{4} << 20;  ///< the output, and any string a template builds
  std::int64_t max_iterations = 1'000'000;  ///< loop iterations + macro calls + items of lists built, in total
  int max_depth = 200;                      ///< nested blocks, expressions and macro calls while rendering
  /// The time strftime_now formats, in seconds since the epoch, as UTC; nullopt: the local time now.
  std::optional<std::int64_t> fixed_now;
};

/// Positional and keyword arguments of a call, filter, test or method.
struct call_args {
  std::vector<value> positional;
  std::vector<std::pair<std::string, value>> keyword;

  /// The argument at `index`, else the keyword `name`, else nullptr.
  const value* get(std::size_t index, std::string_view name) const;
};

/// How a statement list ended: normally, or by {% break %} / {% continue %}.
enum class flow { normal, break_loop, continue_loop };

class renderer {
 public:
  /// `globals`: the context's variables (messages, tools, bos_token, ...).
  renderer(const render_limits& limits, std::vector<std::pair<std::string, value>> globals);

  result<std::string> render(const program& p);

  // expressions (eval_expr.cpp)
  result<value> eval(const expr& e);

  // used by filters, tests, methods and built-in functions
  /// Counts `n` units of work against max_iterations.
  result<void> charge(std::int64_t n);
  /// charge(n), its error naming the template position.
  result<void> charge_at(std::int64_t n, int line, int column);
  /// An error unless a string of `num_bytes` is within max_output_bytes.
  result<void> check_size(std::size_t num_bytes) const;
  const render_limits& limits() const { return limits_; }

 private:
  // statements (renderer.cpp)
  result<flow> exec_body(const std::vector<stmt_ptr>& body);
  result<flow> exec(const stmt& s);
  result<flow> exec_if(const stmt& s);
  result<flow> exec_for(const stmt& s);
  result<flow> run_loop(const stmt& s, const std::vector<value>& items);
  result<void> exec_set(const stmt& s);
  result<void> assign_targets(const stmt& s, value v);
  result<void> write(std::string_view text, const stmt& at);
  result<std::string> capture(const std::vector<stmt_ptr>& body);

  // expressions (eval_expr.cpp)
  result<value> eval_name(const expr& e);
  result<value> eval_list(const expr& e);
  result<value> eval_dict(const expr& e);
  result<value> eval_subscript(const expr& e);
  result<value> eval_slice(const expr& e);
  result<value> eval_call(const expr& e);
  result<value> eval_filter(const expr& e);
  result<value> eval_test(const expr& e);
  result<value> eval_unary(const expr& e);
  result<value> eval_binary(const expr& e);
  result<call_args> eval_args(const expr& e, std::size_t first);
  result<value> call_function(const function& f, const call_args& args, const expr& at);
  result<value> call_macro(const stmt& macro, const call_args& args, const expr& at);
  result<void> bind_params(const stmt& macro, const call_args& args, const expr& at);

  // variables
  const value* lookup(const std::string& name) const;
  void assign(const std::string& name, value v);
  void push_frame(bool is_macro);
  void pop_frame();
  result<void> enter(int line, int column);
  void leave() { --depth_; }

  struct frame {
    std::unordered_map<std::string, value> vars;
    bool is_macro = false;  ///< a macro sees its own frame and the globals only
  };

  render_limits limits_;
  std::vector<frame> frames_;
  std::string* out_ = nullptr;
  std::int64_t num_work_ = 0;
  int depth_ = 0;
};

/// "template line L, column C: what".
std::unexpected<error> error_at(int line, int column, const std::string& what);
std::unexpected<error> error_at(const expr& e, const std::string& what);

}  // namespace inflight::jinja
