#include "core/model/tokenizer/pretokenizer.hpp"

#include <nlohmann/json.hpp>

#include "core/base/codepoints.hpp"
#include "core/model/tokenizer/byte_level.hpp"
#include "core/model/tokenizer/unicode_nfc.hpp"

namespace inflight {
namespace {

using json = nlohmann::json;

// GPT-2's split, used by ByteLevel when use_regex is true.
constexpr std::string_view gpt2_pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

bool is_white_space(char32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::string strip_white_space(const std::string& text, bool left, bool right) {
  std::u32string cps = to_codepoints(text);
  std::size_t begin = 0, end = cps.size();
  while (left && begin < end && is_white_space(cps[begin])) ++begin;
  while (right && end > begin && is_white_space(cps[end - 1])) --end;
  return to_utf8(std::u32string_view(cps).substr(begin, end - begin));
}

std::string replace_all(std::string_view text, const text_pattern& pattern, std::string_view content) {
  std::string out;
  std::size_t last = 0;
  for (auto [begin, end] : pattern.find_all(text)) {
    out.append(text.substr(last, begin - last));
    out.append(content);
    last = end;
  }
  out.append(text.substr(last));
  return out;
}

std::string type_of(const json& config) { return config.value("type", std::string("?")); }

}  // namespace

result<text_pattern> text_pattern::try_from_json(const json& pattern) {
  text_pattern p;
  if (pattern.contains("String")) {
    p.literal = pattern["String"].get<std::string>();
    if (p.literal.empty()) return make_error(errc::corrupt_file, "tokenizer.json: empty String pattern");
    return p;
  }
  if (pattern.contains("Regex")) {
    auto re = hf_regex::try_compile(pattern["Regex"].get<std::string>());
    if (!re) return std::unexpected(re.error());
    p.regex = std::move(*re);
    return p;
  }
  return make_error(errc::corrupt_file, "tokenizer.json: pattern is neither String nor Regex: " + pattern.dump());
}

std::vector<std::pair<std::size_t, std::size_t>> text_pattern::find_all(std::string_view text) const {
  if (regex) return regex->find_all(text);
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  for (std::size_t pos = text.find(literal); pos != std::string_view::npos; pos = text.find(literal, pos + literal.size())) {
    matches.emplace_back(pos, pos + literal.size());
  }
  return matches;
}

result<text_normalizer> text_normalizer::try_from_json(const json& config) {
  text_normalizer n;
  if (config.is_null()) return n;
  if (auto r = n.try_add(config); !r) return std::unexpected(r.error());
  return n;
}

result<void> text_normalizer::try_add(const json& config) {
  const std::string type = type_of(config);
  if (type == "Sequence") {
    for (const auto& child : config.at("normalizers")) {
      if (auto r = try_add(child); !r) return r;
    }
    return {};
  }
  step s{kind::prepend, {}, {}, false, false};
  if (type == "Prepend") {
    s.content = config.at("prepend").get<std::string>();
  } else if (type == "Replace") {
    auto pattern = text_pattern::try_from_json(config.at("pattern"));
    if (!pattern) return std::unexpected(pattern.error());
    s = {kind::replace, config.at("content").get<std::string>(), std::move(*pattern), false, false};
  } else if (type == "NFC") {
    s.type = kind::nfc;
  } else if (type == "Strip") {
    s = {kind::strip, {}, {}, config.value("strip_left", config.value("left", true)),
         config.value("strip_right", config.value("right", true))};
  } else {
    return make_error(errc::unsupported, "tokenizer.json: normalizer '" + type +
                                             "' is not supported (supported: Sequence, Prepend, Replace, NFC, Strip)");
  }
  steps_.push_back(std::move(s));
  return {};
}

std::string text_normalizer::apply(std::string text) const {
  for (const step& s : steps_) {
    if (text.empty()) break;
    switch (s.type) {
      case kind::prepend: text = s.content + text; break;
      case kind::replace: text = replace_all(text, s.pattern, s.content); break;
      case kind::nfc: text = nfc_normalize(text); break;
      case kind::strip: text = strip_white_space(text, s.left, s.right); break;
    }
  }
  return text;
}

result<pre_tokenizer> pre_tokenizer::try_from_json(const json& config) {
  pre_tokenizer p;
  if (config.is_null()) return p;
  if (auto r = p.try_add(config); !r) return std::unexpected(r.error());
  return p;
}

result<void> pre_tokenizer::try_add(const json& config) {
  const std::string type = type_of(config);
  if (type == "Sequence") {
    for (const auto& child : config.at("pretokenizers")) {
      if (auto r = try_add(child); !r) return r;
    }
    return {};
  }
  step s{};
  if (type == "Split") {
    static const std::pair<const char*, behavior> behaviors[] = {
        {"Removed", behavior::removed}, {"Isolated", behavior::isolated},
        {"MergedWithPrevious", behavior::merged_with_previous}, {"MergedWithNext", behavior::merged_with_next},
        {"Contiguous", behavior::contiguous}};
    auto pattern = text_pattern::try_from_json(config.at("pattern"));
    if (!pattern) return std::unexpected(pattern.error());
    s.type = kind::split;
    s.pattern = std::move(*pattern);
    s.invert = config.value("invert", false);
    const std::string name = config.value("behavior", std::string("Isolated"));
    bool is_known = false;
    for (const auto& [n, b] : behaviors) {
      if (name == n) s.split_behavior = b, is_known = true;
    }
    if (!is_known) return make_error(errc::unsupported, "tokenizer.json: Split behavior '" + name + "' is not supported");
  } else if (type == "ByteLevel") {
    s.type = kind::byte_level;
    s.add_prefix_space = config.value("add_prefix_space", true);
    s.use_regex = config.value("use_regex", true);
    if (s.use_regex) {
      auto pattern = text_pattern::try_from_json(json{{"Regex", gpt2_pattern}});
      if (!pattern) return std::unexpected(pattern.error());
      s.pattern = std::move(*pattern);
    }
    is_byte_level_ = true;
  } else if (type == "Metaspace") {
    s.type = kind::metaspace;
    s.replacement = config.value("replacement", std::string("\xE2\x96\x81"));
    s.prepend_scheme = config.value("prepend_scheme", config.value("add_prefix_space", true) ? "always" : "never");
    s.split = config.value("split", true);
    if (s.prepend_scheme != "always" && s.prepend_scheme != "first" && s.prepend_scheme != "never") {
      return make_error(errc::unsupported, "tokenizer.json: Metaspace prepend_scheme '" + s.prepend_scheme + "'");
    }
  } else {
    return make_error(errc::unsupported, "tokenizer.json: pre_tokenizer '" + type +
                                             "' is not supported (supported: Sequence, Split, ByteLevel, Metaspace)");
  }
  steps_.push_back(std::move(s));
  return {};
}

std::vector<std::string> pre_tokenizer::apply(std::string text, std::size_t section_index) const {
  std::vector<std::string> pieces{std::move(text)};
  for (const step& s : steps_) pieces = apply_step(s, std::move(pieces), section_index);
  return pieces;
}

std::vector<std::string> pre_tokenizer::apply_step(const step& s, std::vector<std::string> pieces,
                                                   std::size_t section_index) const {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (std::string& piece : pieces) {
    switch (s.type) {
      case kind::split: split_piece(s, piece, out); break;
      case kind::byte_level: {
        if (s.add_prefix_space && piece.rfind(' ', 0) != 0) piece.insert(0, " ");
        std::vector<std::string> words;
        if (s.use_regex) {
          split_piece(s, piece, words);
        } else {
          words.push_back(std::move(piece));
        }
        for (const auto& w : words) out.push_back(byte_level().encode(w));
        break;
      }
      case kind::metaspace: {
        text_pattern space;
        space.literal = " ";
        std::string replaced = replace_all(piece, space, s.replacement);
        const bool can_prepend = s.prepend_scheme == "always" || (s.prepend_scheme == "first" && section_index == 0);
        if (can_prepend && replaced.rfind(s.replacement, 0) != 0) replaced.insert(0, s.replacement);
        if (!s.split) {
          out.push_back(std::move(replaced));
          break;
        }
        step by_replacement{};
        by_replacement.pattern.literal = s.replacement;
        by_replacement.split_behavior = behavior::merged_with_next;
        split_piece(by_replacement, replaced, out);
        break;
      }
    }
  }
  return out;
}

void pre_tokenizer::split_piece(const step& s, std::string_view piece, std::vector<std::string>& out) {
  // Segments covering the piece: (begin, end, is_delimiter).
  struct segment {
    std::size_t begin, end;
    bool is_delimiter;
  };
  std::vector<segment> segments;
  std::size_t last = 0;
  for (auto [begin, end] : s.pattern.find_all(piece)) {
    if (begin > last) segments.push_back({last, begin, s.invert});
    segments.push_back({begin, end, !s.invert});
    last = end;
  }
  if (last < piece.size()) segments.push_back({last, piece.size(), s.invert});

  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  bool is_previous_delimiter = false;
  for (const segment& g : segments) {
    switch (s.split_behavior) {
      case behavior::removed:
        if (!g.is_delimiter) ranges.emplace_back(g.begin, g.end);
        break;
      case behavior::isolated: ranges.emplace_back(g.begin, g.end); break;
      case behavior::merged_with_previous:
        if (g.is_delimiter && !ranges.empty() && !is_previous_delimiter) {
          ranges.back().second = g.end;
        } else {
          ranges.emplace_back(g.begin, g.end);
        }
        break;
      case behavior::merged_with_next:
        if (!g.is_delimiter && !ranges.empty() && is_previous_delimiter) {
          ranges.back().second = g.end;
        } else {
          ranges.emplace_back(g.begin, g.end);
        }
        break;
      case behavior::contiguous:
        if (g.is_delimiter && is_previous_delimiter && !ranges.empty()) {
          ranges.back().second = g.end;
        } else {
          ranges.emplace_back(g.begin, g.end);
        }
        break;
    }
    is_previous_delimiter = g.is_delimiter;
  }
  for (auto [begin, end] : ranges) {
    if (end > begin) out.emplace_back(piece.substr(begin, end - begin));
  }
}

}  // namespace inflight
