#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/model/tokenizer/hf_regex.hpp"

#include <pcre2.h>

#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

// ECMAScript's \s: differs from PCRE2's Unicode \s on U+0085, U+180E and U+FEFF.
constexpr std::string_view space_set =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

constexpr std::string_view contractions_ci = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr std::string_view contractions_ascii = "(?:'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";

}  // namespace

std::string rewrite_hf_pattern(std::string_view pattern) {
  std::string in(pattern);
  for (std::size_t pos; (pos = in.find(contractions_ci)) != std::string::npos;) {
    in.replace(pos, contractions_ci.size(), contractions_ascii);
  }
  std::string out;
  bool is_in_class = false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '\\' && i + 1 < in.size()) {
      const char next = in[++i];
      if (next == 's') {
        out += is_in_class ? std::string(space_set) : "[" + std::string(space_set) + "]";
      } else if (next == 'S' && !is_in_class) {
        out += "[^" + std::string(space_set) + "]";
      } else if (next == '#' || next == '&' || next == '~') {
        out += next;
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !is_in_class) {
      is_in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < in.size() && in[i + 1] == '^') out += in[++i];
      if (i + 1 < in.size() && in[i + 1] == ']') out += in[++i];
      continue;
    }
    if (c == ']' && is_in_class) is_in_class = false;
    out += c;
  }
  return out;
}

void hf_regex::code_deleter::operator()(void* code) const { pcre2_code_free(static_cast<pcre2_code*>(code)); }

result<hf_regex> hf_regex::try_compile(std::string_view pattern) {
  hf_regex re;
  re.pattern_ = rewrite_hf_pattern(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.pattern_.data()), re.pattern_.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return make_error(errc::corrupt_file, "tokenizer.json: bad regex '" + std::string(pattern) + "' at offset " +
                                              std::to_string(error_offset) + ": " +
                                              reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; interpreted matching still works
  re.code_ = std::shared_ptr<void>(code, code_deleter{});
  return re;
}

std::vector<std::pair<std::size_t, std::size_t>> hf_regex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  auto* code = static_cast<pcre2_code*>(code_.get());
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0;
  while (start <= text.size()) {
    // Callers pass valid UTF-8 (the tokenizer sanitizes its input first).
    const int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const std::size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
    } else {
      if (begin >= text.size()) break;
      start = begin + utf8_char_length(static_cast<unsigned char>(text[begin]));
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

}  // namespace inflight
