#pragma once
/// The one internal grammar representation of constrained decoding: a byte-level
/// context-free grammar. Every front-end (GBNF, regex, choice list, JSON Schema) builds
/// expressions with grammar_builder; build() lowers them into flat rules whose
/// alternatives are sequences of byte sets and rule references.
///
/// Flat layout (what the Earley parser walks): every alternative is a run of elements in
/// one array, closed by an `end` element naming its rule. An Earley item's dot is an
/// index into that array, so "advance the dot" is `pos + 1`.
///
///   elements_: [ bytes{"} ref(chars) bytes{"} end(string) | ref(ws) end(root) | ... ]
///                ^ alt 0 of `string`                        ^ alt 0 of `root`
///
/// Repetition, groups and character classes become helper rules during lowering. A
/// helper is referenced from exactly one place (plus, for loops, a self-reference first
/// in its alternative); such rules are "transparent": their one caller is known
/// statically, which lets the token cache look through them (see token_index.hpp).

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/codepoints.hpp"
#include "core/base/error.hpp"

namespace inflight {

/// A set of byte values, one bit each.
struct byte_set {
  std::array<std::uint64_t, 4> words{};

  static byte_set single(std::uint8_t b) { return range(b, b); }
  static byte_set range(std::uint8_t lo, std::uint8_t hi) {
    byte_set s;
    for (int b = lo; b <= hi; ++b) s.add(static_cast<std::uint8_t>(b));
    return s;
  }
  void add(std::uint8_t b) { words[b >> 6] |= std::uint64_t{1} << (b & 63); }
  bool contains(std::uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  bool is_empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  int count() const {
    int n = 0;
    for (auto w : words) n += std::popcount(w);
    return n;
  }
  byte_set& operator|=(const byte_set& o) {
    for (int i = 0; i < 4; ++i) words[i] |= o.words[i];
    return *this;
  }
  friend bool operator==(const byte_set&, const byte_set&) = default;
};

/// An inclusive range of Unicode code points.
struct codepoint_range {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
};

inline constexpr std::uint32_t max_codepoint = 0x10FFFF;

enum class gexpr_kind : std::uint8_t { bytes, ref, seq, alt, repeat };

/// A grammar expression as front-ends write it. seq{} is the empty string; alt{} matches
/// nothing.
struct gexpr {
  gexpr_kind kind = gexpr_kind::seq;
  byte_set bytes;                   ///< kind == bytes
  std::uint32_t rule_id = 0;        ///< kind == ref
  std::vector<gexpr> items;         ///< seq, alt: children; repeat: the one repeated item
  std::uint32_t min_count = 0;      ///< repeat
  std::optional<std::uint32_t> max_count;  ///< repeat; nullopt = unbounded
};

/// Expression helpers.
gexpr g_bytes(byte_set set);
gexpr g_byte(std::uint8_t b);
gexpr g_literal(std::string_view bytes);
gexpr g_ref(std::uint32_t rule_id);
gexpr g_seq(std::vector<gexpr> items);
gexpr g_alt(std::vector<gexpr> items);
gexpr g_repeat(gexpr item, std::uint32_t min_count, std::optional<std::uint32_t> max_count);
gexpr g_optional(gexpr item);
gexpr g_star(gexpr item);
gexpr g_plus(gexpr item);
/// Any one code point of `ranges` (or, when `is_negated`, any code point outside them),
/// as the alternatives of its UTF-8 byte sequences. Surrogates are never matched.
gexpr g_codepoints(std::vector<codepoint_range> ranges, bool is_negated);

enum class element_kind : std::uint8_t { bytes, ref, end };

/// One element of the flat layout (see the sketch above).
struct grammar_element {
  element_kind kind = element_kind::end;
  std::uint32_t index = 0;  ///< bytes: index into byte_sets(); ref and end: a rule id
};

struct grammar_rule {
  std::string name;
  std::vector<std::uint32_t> alt_starts;  ///< element index of each alternative's first element
  bool is_nullable = false;               ///< derives the empty string
  bool is_transparent = false;            ///< one static caller (see the header comment)
  std::uint32_t parent_pos = 0;           ///< transparent: element index of the one call site
};

/// The optional copies of one bounded repetition x{m,n} (lower_repeat's chain
/// H_k ::= x H_{k-1} | ""), innermost first: copy k is followed by at most k more copies.
/// Copy k is the element range [begins[k], ends[k]) (its rule and the helpers lowered
/// with it). Only chains whose copies 1..n-m-1 have one shape (the same elements, rule
/// references shifted by one copy) and whose x always consumes a byte are kept: there a
/// token of at most k bytes sees the same grammar from copy k as from the outermost
/// copy, which lets the token cache share its lists (see token_index.hpp).
struct repeat_copies {
  std::vector<std::uint32_t> begins;
  std::vector<std::uint32_t> ends;
};

/// A lowered, checked grammar: immutable once built, shared between matchers.
class grammar {
 public:
  const std::vector<grammar_rule>& rules() const { return rules_; }
  const std::vector<grammar_element>& elements() const { return elements_; }
  const std::vector<byte_set>& byte_sets() const { return byte_sets_; }
  std::uint32_t root() const { return root_; }
  /// The rule whose alternative contains element `pos` (its `end` element names it).
  std::uint32_t rule_of(std::uint32_t pos) const { return rule_of_[pos]; }
  /// The bounded repetitions whose copies share a shape, in lowering order (a chain
  /// nested in another one's copy comes before it).
  const std::vector<repeat_copies>& repeats() const { return repeats_; }
  /// Human-readable GBNF-like listing of the lowered rules (for debugging and tests).
  std::string to_text() const;

 private:
  friend class grammar_builder;
  void compute_nullable();
  void compute_transparent();
  std::vector<grammar_rule> rules_;
  std::vector<grammar_element> elements_;
  std::vector<byte_set> byte_sets_;
  std::vector<std::uint32_t> rule_of_;
  std::vector<repeat_copies> repeats_;
  std::uint32_t root_ = 0;
};

/// Most elements a lowered grammar may have (bounded repetitions expand into copies).
inline constexpr std::size_t max_grammar_elements = 4'000'000;

/// Collects named rules, then lowers and checks them.
class grammar_builder {
 public:
  /// A new named rule (defined later with define()); names need not be unique.
  std::uint32_t declare(std::string name);
  /// The id of the rule named `name`, declaring it when new.
  std::uint32_t rule_named(const std::string& name);
  std::optional<std::uint32_t> find(const std::string& name) const;
  void define(std::uint32_t rule_id, gexpr body);
  bool is_defined(std::uint32_t rule_id) const { return bodies_[rule_id].has_value(); }
  const std::string& name_of(std::uint32_t rule_id) const { return names_[rule_id]; }
  std::size_t num_rules() const { return names_.size(); }

  /// Lowers every rule reachable from `root`. Errors: an undefined rule, a root that
  /// derives no string, a grammar over max_grammar_elements.
  result<grammar> build(std::uint32_t root) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<gexpr>> bodies_;
  std::unordered_map<std::string, std::uint32_t> first_named_;  // name -> first rule of that name
};

}  // namespace inflight
