// Expression helpers of grammar.hpp, and code point classes as UTF-8 byte sequences.
#include <algorithm>

#include "core/grammar/grammar.hpp"

namespace inflight {
namespace {

struct byte_range_seq {
  std::vector<std::pair<std::uint8_t, std::uint8_t>> ranges;
};

std::string encode(std::uint32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

// Splits [lo, hi] into ranges whose UTF-8 encodings are products of byte ranges
// (the classic utf8-ranges construction): first at encoding-length boundaries, then at
// the continuation-byte boundaries where the leading bytes differ.
void split_utf8(std::uint32_t lo, std::uint32_t hi, std::vector<byte_range_seq>& out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) split_utf8(lo, 0xD7FF, out);
    if (hi > 0xDFFF) split_utf8(0xE000, hi, out);
    return;
  }
  for (std::uint32_t b : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= b && hi > b) {
      split_utf8(lo, b, out);
      split_utf8(b + 1, hi, out);
      return;
    }
  }
  const std::string a = encode(lo);
  const std::string z = encode(hi);
  for (std::size_t i = 1; i < a.size(); ++i) {
    const std::uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      split_utf8(lo, lo | m, out);
      split_utf8((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      split_utf8(lo, (hi & ~m) - 1, out);
      split_utf8(hi & ~m, hi, out);
      return;
    }
  }
  byte_range_seq seq;
  for (std::size_t i = 0; i < a.size(); ++i)
    seq.ranges.emplace_back(static_cast<std::uint8_t>(a[i]), static_cast<std::uint8_t>(z[i]));
  out.push_back(std::move(seq));
}

std::vector<codepoint_range> normalize(std::vector<codepoint_range> ranges, bool is_negated) {
  std::vector<codepoint_range> merged;
  std::sort(ranges.begin(), ranges.end(), [](auto& x, auto& y) { return x.lo < y.lo; });
  for (auto r : ranges) {
    if (r.lo > r.hi || r.lo > max_codepoint) continue;
    r.hi = std::min(r.hi, max_codepoint);
    if (!merged.empty() && r.lo <= merged.back().hi + 1)
      merged.back().hi = std::max(merged.back().hi, r.hi);
    else
      merged.push_back(r);
  }
  if (!is_negated) return merged;
  std::vector<codepoint_range> complement;
  std::uint32_t next = 0;
  for (auto r : merged) {
    if (r.lo > next) complement.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= max_codepoint) complement.push_back({next, max_codepoint});
  return complement;
}

}  // namespace

gexpr g_bytes(byte_set set) {
  gexpr e;
  e.kind = gexpr_kind::bytes;
  e.bytes = set;
  return e;
}

gexpr g_byte(std::uint8_t b) { return g_bytes(byte_set::single(b)); }

gexpr g_literal(std::string_view bytes) {
  std::vector<gexpr> items;
  items.reserve(bytes.size());
  for (char c : bytes) items.push_back(g_byte(static_cast<std::uint8_t>(c)));
  return g_seq(std::move(items));
}

gexpr g_ref(std::uint32_t rule_id) {
  gexpr e;
  e.kind = gexpr_kind::ref;
  e.rule_id = rule_id;
  return e;
}

gexpr g_seq(std::vector<gexpr> items) {
  if (items.size() == 1) return std::move(items[0]);
  gexpr e;
  e.kind = gexpr_kind::seq;
  e.items = std::move(items);
  return e;
}

gexpr g_alt(std::vector<gexpr> items) {
  if (items.size() == 1) return std::move(items[0]);
  gexpr e;
  e.kind = gexpr_kind::alt;
  e.items = std::move(items);
  return e;
}

gexpr g_repeat(gexpr item, std::uint32_t min_count, std::optional<std::uint32_t> max_count) {
  gexpr e;
  e.kind = gexpr_kind::repeat;
  e.items.push_back(std::move(item));
  e.min_count = min_count;
  e.max_count = max_count;
  return e;
}

gexpr g_optional(gexpr item) { return g_repeat(std::move(item), 0, 1); }
gexpr g_star(gexpr item) { return g_repeat(std::move(item), 0, std::nullopt); }
gexpr g_plus(gexpr item) { return g_repeat(std::move(item), 1, std::nullopt); }

gexpr g_codepoints(std::vector<codepoint_range> ranges, bool is_negated) {
  std::vector<byte_range_seq> seqs;
  for (auto r : normalize(std::move(ranges), is_negated)) split_utf8(r.lo, r.hi, seqs);
  // All one-byte characters share one byte set; longer ones are sequences of byte sets.
  byte_set ascii;
  std::vector<gexpr> alts;
  for (const auto& s : seqs) {
    if (s.ranges.size() == 1) {
      ascii |= byte_set::range(s.ranges[0].first, s.ranges[0].second);
      continue;
    }
    std::vector<gexpr> items;
    for (auto [lo, hi] : s.ranges) items.push_back(g_bytes(byte_set::range(lo, hi)));
    alts.push_back(g_seq(std::move(items)));
  }
  if (!ascii.is_empty()) alts.insert(alts.begin(), g_bytes(ascii));
  if (alts.size() == 1) return std::move(alts[0]);
  gexpr e;
  e.kind = gexpr_kind::alt;  // also for zero alternatives: matches nothing
  e.items = std::move(alts);
  return e;
}

}  // namespace inflight
