#include "core/model/tokenizer/hf_decoder.hpp"

#include <nlohmann/json.hpp>

#include "core/base/codepoints.hpp"
#include "core/model/tokenizer/byte_level.hpp"

namespace inflight {
namespace {

using json = nlohmann::json;

std::string replace_matches(const std::string& text, const text_pattern& pattern, const std::string& content) {
  std::string out;
  std::size_t last = 0;
  for (auto [begin, end] : pattern.find_all(text)) {
    out.append(text, last, begin - last);
    out += content;
    last = end;
  }
  out.append(text, last);
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/// Removes up to `count` leading (or trailing) copies of `content`.
void strip_copies(std::string& s, const std::string& content, int count, bool at_start) {
  for (int i = 0; i < count && !content.empty(); ++i) {
    if (at_start && s.rfind(content, 0) == 0) {
      s.erase(0, content.size());
    } else if (!at_start && s.size() >= content.size() && s.compare(s.size() - content.size(), content.size(), content) == 0) {
      s.resize(s.size() - content.size());
    } else {
      break;
    }
  }
}

}  // namespace

result<hf_decoder> hf_decoder::try_from_json(const json& config) {
  hf_decoder d;
  if (config.is_null()) return d;
  if (auto r = d.try_add(config); !r) return std::unexpected(r.error());
  return d;
}

result<void> hf_decoder::try_add(const json& config) {
  const std::string type = config.value("type", std::string("?"));
  step s{kind::fuse, {}, {}, 0, 0, true};
  if (type == "Sequence") {
    for (const auto& child : config.at("decoders")) {
      if (auto r = try_add(child); !r) return r;
    }
    return {};
  } else if (type == "Replace") {
    auto pattern = text_pattern::try_from_json(config.at("pattern"));
    if (!pattern) return std::unexpected(pattern.error());
    s = {kind::replace, std::move(*pattern), config.at("content").get<std::string>(), 0, 0, true};
  } else if (type == "ByteFallback") {
    s.type = kind::byte_fallback;
  } else if (type == "Fuse") {
    has_fuse_ = true;
  } else if (type == "Strip") {
    s = {kind::strip, {}, config.value("content", std::string(" ")), config.value("start", 0), config.value("stop", 0), true};
    // After Fuse the text is one string whose end is unknown while streaming.
    if (has_fuse_ && s.stop > 0) return make_error(errc::unsupported, "tokenizer.json: Strip decoder with stop > 0");
  } else if (type == "ByteLevel") {
    s.type = kind::byte_level;
  } else if (type == "Metaspace") {
    s.type = kind::metaspace;
    s.content = config.value("replacement", std::string("\xE2\x96\x81"));
    const std::string scheme = config.value("prepend_scheme", config.value("add_prefix_space", true) ? "always" : "never");
    s.can_strip_first = scheme != "never";
  } else {
    return make_error(errc::unsupported, "tokenizer.json: decoder '" + type +
                                             "' is not supported (supported: Sequence, Replace, ByteFallback, Fuse, "
                                             "Strip, ByteLevel, Metaspace)");
  }
  steps_.push_back(std::move(s));
  return {};
}

std::string hf_decoder::decode_piece(const std::string& piece, bool is_text_start) const {
  std::string s = piece;
  bool is_fused = false;
  for (const step& st : steps_) {
    switch (st.type) {
      case kind::replace: s = replace_matches(s, st.pattern, st.content); break;
      case kind::byte_fallback:
        if (s.size() == 6 && s.rfind("<0x", 0) == 0 && s[5] == '>' && hex_value(s[3]) >= 0 && hex_value(s[4]) >= 0) {
          s = std::string(1, static_cast<char>(hex_value(s[3]) * 16 + hex_value(s[4])));
        }
        break;
      case kind::fuse: is_fused = true; break;
      case kind::strip:
        if (!is_fused || is_text_start) strip_copies(s, st.content, st.start, true);
        if (!is_fused) strip_copies(s, st.content, st.stop, false);
        break;
      case kind::byte_level:
        if (auto bytes = byte_level().decode(s)) s = std::move(*bytes);
        break;
      case kind::metaspace: {
        text_pattern replacement;
        replacement.literal = st.content;
        s = replace_matches(s, replacement, " ");
        if (is_text_start && st.can_strip_first && s.rfind(' ', 0) == 0) s.erase(0, 1);
        break;
      }
    }
  }
  return s;
}

}  // namespace inflight
