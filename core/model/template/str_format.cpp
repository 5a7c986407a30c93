#include "core/model/template/str_format.hpp"

#include <charconv>

#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {

std::unexpected<error> format_error(const std::string& what) {
  return std::unexpected(error{errc::invalid_argument, "format(): " + what});
}

struct field {
  std::string name;        ///< "" (the next positional), digits, or a keyword
  char conversion = '\0';  ///< 's', 'r' or none
  std::string spec;
};

/// Parses the text between `{` and `}` of a replacement field.
result<field> parse_field(std::string_view text) {
  field f;
  const std::size_t colon = text.find(':');
  if (colon != std::string_view::npos) f.spec = std::string(text.substr(colon + 1)), text = text.substr(0, colon);
  const std::size_t bang = text.find('!');
  if (bang != std::string_view::npos) {
    const std::string_view conv = text.substr(bang + 1);
    if (conv != "s" && conv != "r") return format_error("unknown conversion '!" + std::string(conv) + "'");
    f.conversion = conv[0];
    text = text.substr(0, bang);
  }
  if (text.find_first_of(".[") != std::string_view::npos) return format_error("attribute and index fields are not supported");
  f.name = std::string(text);
  return f;
}

/// Fill, alignment and width: "<10", "*^7", ">3"; strings align left by default, numbers right.
result<std::string> apply_spec(std::string text, const std::string& spec, bool is_number) {
  if (spec.empty()) return text;
  std::string_view s = spec;
  std::string fill = " ";
  char align = is_number ? '>' : '<';
  const std::vector<std::string> chars = split_characters(s);
  auto is_align = [](std::string_view c) { return c == "<" || c == ">" || c == "^"; };
  if (chars.size() >= 2 && is_align(chars[1])) {
    fill = chars[0], align = chars[1][0];
    s.remove_prefix(chars[0].size() + 1);
  } else if (!chars.empty() && is_align(chars[0])) {
    align = chars[0][0];
    s.remove_prefix(1);
  }
  if (!s.empty() && (s.back() == 's' || s.back() == 'd')) s.remove_suffix(1);
  std::size_t width = 0;
  if (!s.empty()) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), width);
    if (ec != std::errc() || end != s.data() + s.size() || width > 4096) {
      return format_error("format spec '" + spec + "' is not supported");
    }
  }
  const std::size_t length = count_characters(text);
  if (length >= width) return text;
  const std::size_t pad = width - length;
  const std::size_t left = align == '<' ? 0 : align == '>' ? pad : pad / 2;
  std::string out;
  for (std::size_t i = 0; i < left; ++i) out += fill;
  out += text;
  for (std::size_t i = left; i < pad; ++i) out += fill;
  return out;
}

/// How a format string numbers its fields: Python refuses to mix `{}` and `{0}`.
enum class numbering { unknown, automatic, manual };

result<const value*> argument_of(const field& f, const call_args& args, std::size_t& next_auto, numbering& mode) {
  const bool is_positional = f.name.empty() || (f.name[0] >= '0' && f.name[0] <= '9');
  if (is_positional) {
    const numbering wanted = f.name.empty() ? numbering::automatic : numbering::manual;
    if (mode != numbering::unknown && mode != wanted) {
      return format_error(f.name.empty() ? "cannot switch from manual field specification to automatic field numbering"
                                         : "cannot switch from automatic field numbering to manual field specification");
    }
    mode = wanted;
  }
  if (f.name.empty()) {
    if (next_auto >= args.positional.size()) return format_error("Replacement index " + std::to_string(next_auto) + " out of range");
    return &args.positional[next_auto++];
  }
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(f.name.data(), f.name.data() + f.name.size(), index);
  if (ec == std::errc() && end == f.name.data() + f.name.size()) {
    if (index >= args.positional.size()) return format_error("Replacement index " + f.name + " out of range");
    return &args.positional[index];
  }
  for (const auto& [name, v] : args.keyword) {
    if (name == f.name) return &v;
  }
  return format_error("no argument named '" + f.name + "'");
}

}  // namespace

result<std::string> python_format(const std::string& s, const call_args& args) {
  std::string out;
  std::size_t next_auto = 0;
  numbering mode = numbering::unknown;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') return format_error("Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = s.find('}', i + 1);
    if (close == std::string::npos) return format_error("Single '{' encountered in format string");
    auto f = parse_field(std::string_view(s).substr(i + 1, close - i - 1));
    if (!f) return std::unexpected(f.error());
    auto arg = argument_of(*f, args, next_auto, mode);
    if (!arg) return std::unexpected(arg.error());
    const value& v = **arg;
    auto text = apply_spec(f->conversion == 'r' ? to_repr(v) : to_text(v), f->spec, v.is_number());
    if (!text) return std::unexpected(text.error());
    out += *text;
    i = close;
  }
  return out;
}

}  // namespace inflight::jinja
