#include "core/model/tokenizer/unicode_nfc.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/base/codepoints.hpp"

namespace inflight {
namespace {

using namespace nfc_detail;

// Hangul syllables are composed and decomposed arithmetically (Unicode 3.12).
constexpr char32_t hangul_s_base = 0xAC00, hangul_l_base = 0x1100, hangul_v_base = 0x1161,
                   hangul_t_base = 0x11A7;
constexpr int hangul_l_count = 19, hangul_v_count = 21, hangul_t_count = 28;
constexpr int hangul_n_count = hangul_v_count * hangul_t_count;
constexpr int hangul_s_count = hangul_l_count * hangul_n_count;

struct nfc_data {
  std::unordered_map<char32_t, std::pair<char32_t, char32_t>> decompose;
  std::unordered_map<std::uint64_t, char32_t> compose;
  std::unordered_set<char32_t> unstable;  ///< characters that NFC may change (decomposable or second of a pair)

  nfc_data() {
    decompose.reserve(num_decompositions);
    for (std::size_t i = 0; i < num_decompositions; ++i) {
      const auto& e = decompositions[i];
      decompose.emplace(e.code_point, std::pair<char32_t, char32_t>{e.first, e.second});
      if (e.is_primary_composite) {
        compose.emplace((std::uint64_t{e.first} << 32) | e.second, e.code_point);
        unstable.insert(e.second);
      } else {
        unstable.insert(e.code_point);
      }
    }
  }
};

const nfc_data& data() {
  static const nfc_data instance;
  return instance;
}

int combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = combining_classes + num_combining_classes;
  const auto* it = std::upper_bound(combining_classes, end, cp,
                                    [](char32_t c, const combining_class_range& r) { return c < r.first; });
  if (it == combining_classes) return 0;
  --it;
  return cp <= it->last ? it->combining_class : 0;
}

void decompose_into(char32_t cp, std::u32string& out) {
  if (cp >= hangul_s_base && cp < hangul_s_base + hangul_s_count) {
    const int s = static_cast<int>(cp - hangul_s_base);
    out.push_back(hangul_l_base + s / hangul_n_count);
    out.push_back(hangul_v_base + (s % hangul_n_count) / hangul_t_count);
    if (s % hangul_t_count != 0) out.push_back(hangul_t_base + s % hangul_t_count);
    return;
  }
  const auto& table = data().decompose;
  auto it = table.find(cp);
  if (it == table.end()) {
    out.push_back(cp);
    return;
  }
  decompose_into(it->second.first, out);
  if (it->second.second != 0) decompose_into(it->second.second, out);
}

/// Stable sort of every run of non-starters by combining class.
void canonical_order(std::u32string& cps) {
  std::size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

/// The primary composite of `first` + `second`, or 0.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= hangul_l_base && first < hangul_l_base + hangul_l_count && second >= hangul_v_base &&
      second < hangul_v_base + hangul_v_count) {
    return hangul_s_base + ((first - hangul_l_base) * hangul_v_count + (second - hangul_v_base)) * hangul_t_count;
  }
  if (first >= hangul_s_base && first < hangul_s_base + hangul_s_count && (first - hangul_s_base) % hangul_t_count == 0 &&
      second > hangul_t_base && second < hangul_t_base + hangul_t_count) {
    return first + (second - hangul_t_base);
  }
  const auto& table = data().compose;
  auto it = table.find((std::uint64_t{first} << 32) | second);
  return it == table.end() ? 0 : it->second;
}

void canonical_compose(std::u32string& cps) {
  if (cps.empty()) return;
  std::size_t starter = 0, out = 1;
  int last_class = combining_class(cps[0]) == 0 ? 0 : 256;
  if (last_class != 0) starter = std::u32string::npos;
  for (std::size_t i = 1; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const int cls = combining_class(cp);
    // A character is blocked from the starter when an intervening one has class 0 or >= its own.
    const bool is_blocked = out - 1 != starter && (last_class == 0 || last_class >= cls);
    if (starter != std::u32string::npos && !is_blocked) {
      if (char32_t composite = compose_pair(cps[starter], cp); composite != 0) {
        cps[starter] = composite;
        continue;
      }
    }
    if (cls == 0) starter = out;
    last_class = cls;
    cps[out++] = cp;
  }
  cps.resize(out);
}

/// True when no character of `text` can change under NFC: no combining marks, no
/// excluded or singleton decompositions, nothing that composes with its predecessor.
bool is_nfc_quick(std::string_view text) {
  const auto& unstable = data().unstable;
  for (char32_t cp : to_codepoints(text)) {
    if (cp < 0x300) continue;
    if (combining_class(cp) != 0 || unstable.count(cp) != 0) return false;
    if ((cp >= hangul_v_base && cp < hangul_v_base + hangul_v_count) || (cp > hangul_t_base && cp < hangul_t_base + hangul_t_count)) return false;
  }
  return true;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
  // Text below U+0300 is already NFC: none of it decomposes or combines.
  bool is_trivial = true;
  for (unsigned char c : text) {
    if (c >= 0xCC) {  // lead bytes of U+0300 and above
      is_trivial = false;
      break;
    }
  }
  if (is_trivial || is_nfc_quick(text)) return std::string(text);
  std::u32string decomposed;
  for (char32_t cp : to_codepoints(text)) decompose_into(cp, decomposed);
  canonical_order(decomposed);
  canonical_compose(decomposed);
  return to_utf8(decomposed);
}

}  // namespace inflight
