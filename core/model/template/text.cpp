#include "core/model/template/text.hpp"

#include "core/base/codepoints.hpp"

namespace inflight::jinja {
namespace {

bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_ascii_letter(char c) { return is_ascii_upper(c) || is_ascii_lower(c); }
char to_upper(char c) { return is_ascii_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }
char to_lower(char c) { return is_ascii_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool is_python_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::vector<std::string> split_characters(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_char_length(static_cast<unsigned char>(s[i]));
    if (i + n > s.size()) n = 1;
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::size_t count_characters(std::string_view s) { return to_codepoints(s).size(); }

std::string python_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string cps = to_codepoints(s);
  const std::u32string set = chars ? to_codepoints(*chars) : std::u32string();
  auto strips = [&](char32_t cp) { return chars ? set.find(cp) != std::u32string::npos : is_python_space(cp); };
  std::size_t begin = 0, end = cps.size();
  while (left && begin < end && strips(cps[begin])) ++begin;
  while (right && end > begin && strips(cps[end - 1])) --end;
  if (begin == 0 && end == cps.size()) return std::string(s);  // keeps invalid bytes untouched
  return to_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

std::vector<std::string> python_split(std::string_view s, const std::optional<std::string>& sep, long long max_split) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t begin = 0;
    for (std::size_t at = s.find(*sep); at != std::string_view::npos && (max_split < 0 || static_cast<long long>(out.size()) < max_split);
         at = s.find(*sep, begin)) {
      out.emplace_back(s.substr(begin, at - begin));
      begin = at + sep->size();
    }
    out.emplace_back(s.substr(begin));
    return out;
  }
  const std::u32string cps = to_codepoints(s);
  std::size_t i = 0;
  while (true) {
    while (i < cps.size() && is_python_space(cps[i])) ++i;
    if (i == cps.size()) break;
    std::size_t end = i;
    if (max_split >= 0 && static_cast<long long>(out.size()) == max_split) {
      end = cps.size();
      while (end > i && is_python_space(cps[end - 1])) --end;
    } else {
      while (end < cps.size() && !is_python_space(cps[end])) ++end;
    }
    out.push_back(to_utf8(std::u32string_view(cps).substr(i, end - i)));
    i = end;
  }
  return out;
}

std::optional<std::string> python_replace(std::string_view s, std::string_view old, std::string_view with,
                                          long long count, std::size_t max_bytes) {
  std::string out;
  long long num_done = 0;
  auto can_replace = [&] { return count < 0 || num_done < count; };
  if (old.empty()) {
    for (const std::string& c : split_characters(s)) {
      if (can_replace()) out += with, ++num_done;
      out += c;
      if (out.size() > max_bytes) return std::nullopt;
    }
    if (can_replace()) out += with;
    return out.size() > max_bytes ? std::nullopt : std::optional(out);
  }
  std::size_t begin = 0;
  for (std::size_t at = s.find(old); at != std::string_view::npos && can_replace(); at = s.find(old, begin)) {
    out.append(s.substr(begin, at - begin)).append(with);
    ++num_done;
    begin = at + old.size();
    if (out.size() > max_bytes) return std::nullopt;
  }
  out.append(s.substr(begin));
  return out.size() > max_bytes ? std::nullopt : std::optional(out);
}

std::size_t python_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return count_characters(s) + 1;
  std::size_t n = 0;
  for (std::size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

long long python_find(std::string_view s, std::string_view sub) {
  const std::size_t at = s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<long long>(count_characters(s.substr(0, at)));
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = to_upper(c);
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = to_lower(c);
  return out;
}

std::string python_capitalize(std::string_view s) {
  std::string out = ascii_lower(s);
  if (!out.empty()) out[0] = to_upper(out[0]);
  return out;
}

std::string python_title(std::string_view s) {
  std::string out(s);
  bool after_letter = false;
  for (char& c : out) {
    if (is_ascii_letter(c)) c = after_letter ? to_lower(c) : to_upper(c);
    after_letter = is_ascii_letter(c);
  }
  return out;
}

std::string jinja_title(std::string_view s) {
  std::string out(s);
  bool word_start = true;
  for (char& c : out) {
    const bool is_break = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' ||
                          c == '(' || c == '{' || c == '[' || c == '<';
    if (!is_break) c = word_start ? to_upper(c) : to_lower(c);
    word_start = is_break;
  }
  return out;
}

}  // namespace inflight::jinja
