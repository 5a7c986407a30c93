#include "core/model/tokenizer/added_tokens.hpp"

#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

// White space as the reference ports trim it (ECMAScript String.prototype.trim).
bool is_trim_space(char32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

std::string_view trim_end(std::string_view s) {
  auto cps = to_codepoints(s);
  std::size_t bytes = s.size();
  while (!cps.empty() && is_trim_space(cps.back())) {
    std::string tail;
    append_utf8(tail, cps.back());
    bytes -= tail.size();
    cps.pop_back();
  }
  return s.substr(0, bytes);
}

std::string_view trim_start(std::string_view s) {
  std::size_t pos = 0;
  for (char32_t cp : to_codepoints(s)) {
    if (!is_trim_space(cp)) break;
    std::string head;
    append_utf8(head, cp);
    pos += head.size();
  }
  return s.substr(pos);
}

}  // namespace

added_token_matcher::added_token_matcher(const std::vector<added_token>& tokens) : tokens_(tokens) {
  nodes_.emplace_back();
  for (std::size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;
    can_start_[static_cast<unsigned char>(content[0])] = true;
    std::int32_t at = 0;
    for (unsigned char byte : content) {
      std::int32_t next = child(at, byte);
      if (next < 0) {
        next = static_cast<std::int32_t>(nodes_.size());
        nodes_[at].children.emplace_back(byte, next);
        nodes_.emplace_back();
      }
      at = next;
    }
    nodes_[at].token_index = static_cast<std::int32_t>(t);
  }
}

std::int32_t added_token_matcher::child(std::int32_t node_index, unsigned char byte) const {
  for (const auto& [b, next] : nodes_[node_index].children) {
    if (b == byte) return next;
  }
  return -1;
}

std::pair<std::size_t, std::int32_t> added_token_matcher::longest_at(std::string_view text, std::size_t pos) const {
  std::pair<std::size_t, std::int32_t> best{0, -1};
  std::int32_t at = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    at = child(at, static_cast<unsigned char>(text[i]));
    if (at < 0) break;
    if (nodes_[at].token_index >= 0) best = {i + 1 - pos, nodes_[at].token_index};
  }
  return best;
}

std::vector<text_section> added_token_matcher::split(std::string_view text) const {
  std::vector<text_section> sections;
  std::size_t plain_start = 0;
  bool strip_next_start = false;
  auto push_plain = [&](std::string_view plain) {
    if (strip_next_start) plain = trim_start(plain);
    strip_next_start = false;
    if (!plain.empty()) sections.push_back({plain, -1});
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (nodes_.empty() || !can_start_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [length, index] = longest_at(text, pos);
    if (length == 0) {
      ++pos;
      continue;
    }
    const added_token& token = tokens_[index];
    std::string_view before = text.substr(plain_start, pos - plain_start);
    if (token.lstrip) before = trim_end(before);
    push_plain(before);
    sections.push_back({text.substr(pos, length), token.id});
    strip_next_start = token.rstrip;
    pos += length;
    plain_start = pos;
  }
  push_plain(text.substr(plain_start));
  return sections;
}

}  // namespace inflight
