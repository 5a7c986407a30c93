// Lowering of grammar_builder's expressions into the flat rules of `grammar`, and the
// analyses the parser and the token cache need (productive, nullable, transparent).
#include "core/grammar/grammar.hpp"

#include <algorithm>
#include <map>

namespace inflight {
namespace {

using alternative = std::vector<grammar_element>;

struct lowered_rule {
  std::string name;
  std::vector<alternative> alts;
};

// The copies of one bounded repetition's optional chain, innermost first: copy k owns
// the rules [first_rule[k], end_rule[k]).
struct lowered_chain {
  std::vector<std::uint32_t> first_rule;
  std::vector<std::uint32_t> end_rule;
};

class lowerer {
 public:
  explicit lowerer(const std::vector<std::optional<gexpr>>& bodies,
                   const std::vector<std::string>& names)
      : bodies_(bodies), names_(names), flat_of_named_(bodies.size()) {}

  result<std::uint32_t> lower_all(std::uint32_t root) {
    const std::uint32_t flat_root = flat_id(root);
    while (!pending_.empty()) {
      const std::uint32_t named = pending_.back();
      pending_.pop_back();
      if (!bodies_[named])
        return make_error(errc::invalid_argument, "grammar rule '" + names_[named] + "' is not defined");
      const std::uint32_t id = *flat_of_named_[named];
      lower_rule_body(id, *bodies_[named]);
      if (num_elements_ > max_grammar_elements)
        return make_error(errc::invalid_argument, "grammar is too large (bounded repetitions expand to over " +
                                                      std::to_string(max_grammar_elements) + " elements)");
    }
    return flat_root;
  }

  std::vector<lowered_rule> rules;
  std::vector<byte_set> byte_sets;
  std::vector<lowered_chain> chains;  // of 3 copies or more, in lowering order

 private:
  std::uint32_t flat_id(std::uint32_t named) {
    if (!flat_of_named_[named]) {
      flat_of_named_[named] = new_rule(names_[named]);
      pending_.push_back(named);
    }
    return *flat_of_named_[named];
  }

  std::uint32_t new_rule(std::string name) {
    rules.push_back({std::move(name), {}});
    return static_cast<std::uint32_t>(rules.size() - 1);
  }

  std::uint32_t new_helper(std::uint32_t owner) {
    return new_rule(rules[owner].name + "_" + std::to_string(rules.size()));
  }

  std::uint32_t intern(const byte_set& s) {
    auto [it, is_new] = byte_set_ids_.try_emplace(s.words, static_cast<std::uint32_t>(byte_sets.size()));
    if (is_new) byte_sets.push_back(s);
    return it->second;
  }

  void add_alt(std::uint32_t rule, alternative alt) {
    ++num_elements_;  // its end; the others are counted as they are emitted
    rules[rule].alts.push_back(std::move(alt));
  }

  void lower_rule_body(std::uint32_t id, const gexpr& body) {
    if (body.kind == gexpr_kind::alt && !is_byte_alt(body)) {
      for (const auto& item : body.items) add_alt(id, lower_seq(id, item));
    } else {
      add_alt(id, lower_seq(id, body));
    }
  }

  static bool is_byte_alt(const gexpr& e) {
    if (e.items.empty()) return false;
    for (const auto& item : e.items)
      if (item.kind != gexpr_kind::bytes) return false;
    return true;
  }

  alternative lower_seq(std::uint32_t owner, const gexpr& e) {
    alternative out;
    lower_into(owner, e, out);
    return out;
  }

  void lower_into(std::uint32_t owner, const gexpr& e, alternative& out) {
    if (num_elements_ > max_grammar_elements) return;
    switch (e.kind) {
      case gexpr_kind::bytes:
        out.push_back({element_kind::bytes, intern(e.bytes)});
        ++num_elements_;
        return;
      case gexpr_kind::ref:
        out.push_back({element_kind::ref, flat_id(e.rule_id)});
        ++num_elements_;
        return;
      case gexpr_kind::seq:
        for (const auto& item : e.items) lower_into(owner, item, out);
        return;
      case gexpr_kind::alt:
        lower_alt(owner, e, out);
        return;
      case gexpr_kind::repeat:
        lower_repeat(owner, e, out);
        return;
    }
  }

  void lower_alt(std::uint32_t owner, const gexpr& e, alternative& out) {
    if (e.items.size() == 1) return lower_into(owner, e.items[0], out);
    if (is_byte_alt(e)) {
      byte_set all;
      for (const auto& item : e.items) all |= item.bytes;
      out.push_back({element_kind::bytes, intern(all)});
      ++num_elements_;
      return;
    }
    const std::uint32_t h = new_helper(owner);
    for (const auto& item : e.items) add_alt(h, lower_seq(h, item));
    out.push_back({element_kind::ref, h});
    ++num_elements_;
  }

  // x{m,n}: m copies inline, then a chain of optional copies (H_k ::= x H_{k-1} | "");
  // x{m,}: m copies, then a left-recursive loop H ::= H x | "" (Earley keeps a constant
  // number of items per byte for left recursion; right recursion grows with the length).
  // Each copy is lowered afresh so that every helper keeps exactly one caller.
  void lower_repeat(std::uint32_t owner, const gexpr& e, alternative& out) {
    const gexpr& x = e.items[0];
    for (std::uint32_t i = 0; i < e.min_count && num_elements_ <= max_grammar_elements; ++i)
      lower_into(owner, x, out);
    if (!e.max_count) {
      const std::uint32_t h = new_helper(owner);
      alternative loop{{element_kind::ref, h}};
      lower_into(h, x, loop);
      add_alt(h, std::move(loop));
      add_alt(h, {});
      out.push_back({element_kind::ref, h});
      num_elements_ += 2;
      return;
    }
    if (*e.max_count <= e.min_count) return;
    std::optional<std::uint32_t> inner;
    lowered_chain chain;
    for (std::uint32_t k = 0; k < *e.max_count - e.min_count; ++k) {
      if (num_elements_ > max_grammar_elements) return;
      const std::uint32_t h = new_helper(owner);
      alternative once = lower_seq(h, x);
      if (inner) once.push_back({element_kind::ref, *inner});
      add_alt(h, std::move(once));
      add_alt(h, {});
      num_elements_ += 2;
      inner = h;
      chain.first_rule.push_back(h);
      chain.end_rule.push_back(static_cast<std::uint32_t>(rules.size()));
    }
    if (chain.first_rule.size() >= 3) chains.push_back(std::move(chain));
    out.push_back({element_kind::ref, *inner});
  }

  const std::vector<std::optional<gexpr>>& bodies_;
  const std::vector<std::string>& names_;
  std::vector<std::optional<std::uint32_t>> flat_of_named_;
  std::vector<std::uint32_t> pending_;
  std::map<std::array<std::uint64_t, 4>, std::uint32_t> byte_set_ids_;
  std::size_t num_elements_ = 0;
};

// Rules that derive at least one string; alternatives using any other rule (or an empty
// byte set) are dropped, so that every live Earley item can still reach an accepting state.
std::vector<bool> productive_rules(const std::vector<lowered_rule>& rules,
                                   const std::vector<byte_set>& sets) {
  std::vector<bool> is_productive(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < rules.size(); ++r) {
      if (is_productive[r]) continue;
      for (const auto& alt : rules[r].alts) {
        bool ok = true;
        for (auto el : alt)
          ok = ok && (el.kind == element_kind::bytes ? !sets[el.index].is_empty() : is_productive[el.index]);
        if (ok) {
          is_productive[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return is_productive;
}

void prune_unproductive(std::vector<lowered_rule>& rules, const std::vector<byte_set>& sets,
                        const std::vector<bool>& is_productive) {
  for (auto& rule : rules) {
    std::erase_if(rule.alts, [&](const alternative& alt) {
      for (auto el : alt)
        if (el.kind == element_kind::bytes ? sets[el.index].is_empty() : !is_productive[el.index]) return true;
      return false;
    });
  }
}

// Copy a and copy b (a, b >= 1) of a chain have one shape: element for element the same
// kinds and byte sets; references to a copy's own rules at the same offsets, the
// reference to the next copy inward to that copy, and every other reference (a named
// rule, even one first lowered inside copy 0) to the same rule.
bool has_copy_shape(const grammar& g, const lowered_chain& chain, std::size_t a, std::size_t b,
                    const std::vector<std::uint32_t>& rule_begin) {
  const std::uint32_t a_begin = rule_begin[chain.first_rule[a]];
  const std::uint32_t b_begin = rule_begin[chain.first_rule[b]];
  const std::uint32_t size = rule_begin[chain.end_rule[a]] - a_begin;
  if (rule_begin[chain.end_rule[b]] - b_begin != size) return false;
  auto counterpart = [&](std::uint32_t rule) {
    if (rule >= chain.first_rule[a] && rule < chain.end_rule[a]) return rule - chain.first_rule[a] + chain.first_rule[b];
    if (rule == chain.first_rule[a - 1]) return chain.first_rule[b - 1];
    return rule;
  };
  for (std::uint32_t i = 0; i < size; ++i) {
    const grammar_element ea = g.elements()[a_begin + i];
    const grammar_element eb = g.elements()[b_begin + i];
    if (ea.kind != eb.kind) return false;
    if (eb.index != (ea.kind == element_kind::bytes ? ea.index : counterpart(ea.index))) return false;
  }
  return true;
}

// The chain's copy `outer` is "x inner | <empty>" and x cannot derive the empty string.
bool copy_always_consumes(const grammar& g, std::uint32_t outer, std::uint32_t inner) {
  const auto& starts = g.rules()[outer].alt_starts;
  if (starts.size() != 2 || g.elements()[starts[1]].kind != element_kind::end) return false;
  std::uint32_t pos = starts[0];
  bool consumes = false;
  for (; g.elements()[pos + 1].kind != element_kind::end; ++pos) {
    const grammar_element el = g.elements()[pos];
    consumes = consumes || el.kind == element_kind::bytes || !g.rules()[el.index].is_nullable;
  }
  const grammar_element last = g.elements()[pos];
  return consumes && last.kind == element_kind::ref && last.index == inner;
}

}  // namespace

std::uint32_t grammar_builder::declare(std::string name) {
  const auto id = static_cast<std::uint32_t>(names_.size());
  first_named_.try_emplace(name, id);
  names_.push_back(std::move(name));
  bodies_.emplace_back();
  return id;
}

std::uint32_t grammar_builder::rule_named(const std::string& name) {
  if (auto id = find(name)) return *id;
  return declare(name);
}

std::optional<std::uint32_t> grammar_builder::find(const std::string& name) const {
  const auto it = first_named_.find(name);
  if (it == first_named_.end()) return std::nullopt;
  return it->second;
}

void grammar_builder::define(std::uint32_t rule_id, gexpr body) { bodies_[rule_id] = std::move(body); }

result<grammar> grammar_builder::build(std::uint32_t root) const {
  lowerer low(bodies_, names_);
  auto flat_root = low.lower_all(root);
  if (!flat_root) return std::unexpected(flat_root.error());
  const auto is_productive = productive_rules(low.rules, low.byte_sets);
  if (!is_productive[*flat_root])
    return make_error(errc::invalid_argument,
                      "grammar derives no string: rule '" + names_[root] + "' can never be completed");
  prune_unproductive(low.rules, low.byte_sets, is_productive);

  grammar g;
  g.root_ = *flat_root;
  g.byte_sets_ = std::move(low.byte_sets);
  std::vector<std::uint32_t> rule_begin(low.rules.size() + 1);  // the first element of each rule
  for (std::uint32_t r = 0; r < low.rules.size(); ++r) {
    rule_begin[r] = static_cast<std::uint32_t>(g.elements_.size());
    grammar_rule rule;
    rule.name = std::move(low.rules[r].name);
    for (auto& alt : low.rules[r].alts) {
      rule.alt_starts.push_back(static_cast<std::uint32_t>(g.elements_.size()));
      for (auto el : alt) g.elements_.push_back(el);
      g.elements_.push_back({element_kind::end, r});
    }
    g.rules_.push_back(std::move(rule));
  }
  rule_begin.back() = static_cast<std::uint32_t>(g.elements_.size());
  g.rule_of_.resize(g.elements_.size());
  for (std::size_t pos = g.elements_.size(); pos-- > 0;)
    if (g.elements_[pos].kind == element_kind::end)
      g.rule_of_[pos] = g.elements_[pos].index;
    else
      g.rule_of_[pos] = g.rule_of_[pos + 1];
  g.compute_nullable();
  g.compute_transparent();
  for (const auto& chain : low.chains) {
    const std::size_t n = chain.first_rule.size();
    bool is_uniform = true;
    for (std::size_t k = 1; k + 1 < n && is_uniform; ++k)
      is_uniform = has_copy_shape(g, chain, k, n - 1, rule_begin);
    if (!is_uniform || !copy_always_consumes(g, chain.first_rule[n - 1], chain.first_rule[n - 2])) continue;
    repeat_copies copies;
    for (std::size_t k = 0; k < n; ++k) {
      copies.begins.push_back(rule_begin[chain.first_rule[k]]);
      copies.ends.push_back(rule_begin[chain.end_rule[k]]);
    }
    g.repeats_.push_back(std::move(copies));
  }
  return g;
}


void grammar::compute_nullable() {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& rule : rules_) {
      if (rule.is_nullable) continue;
      for (auto start : rule.alt_starts) {
        std::uint32_t pos = start;
        while (elements_[pos].kind == element_kind::ref && rules_[elements_[pos].index].is_nullable) ++pos;
        if (elements_[pos].kind == element_kind::end) {
          rule.is_nullable = true;
          changed = true;
          break;
        }
      }
    }
  }
}

// A rule is transparent when it has one call site outside itself and calls itself only
// first (left recursion: the parser seeds those items) or last (tail recursion: completing
// the inner call completes the outer one); chains of transparent rules must end at a rule
// that is not.
void grammar::compute_transparent() {
  const std::size_t n = rules_.size();
  std::vector<std::uint32_t> num_sites(n, 0);
  std::vector<bool> has_bad_self(n, false);
  for (std::uint32_t pos = 0; pos < elements_.size(); ++pos) {
    if (elements_[pos].kind != element_kind::ref) continue;
    const std::uint32_t target = elements_[pos].index;
    if (rule_of_[pos] == target) {
      const auto& starts = rules_[target].alt_starts;
      const bool is_head = std::find(starts.begin(), starts.end(), pos) != starts.end();
      if (!is_head && elements_[pos + 1].kind != element_kind::end) has_bad_self[target] = true;
      continue;
    }
    ++num_sites[target];
    rules_[target].parent_pos = pos;
  }
  for (std::uint32_t r = 0; r < n; ++r)
    rules_[r].is_transparent = r != root_ && num_sites[r] == 1 && !has_bad_self[r];
  for (std::uint32_t r = 0; r < n; ++r) {
    if (!rules_[r].is_transparent) continue;
    std::uint32_t cur = r;
    std::size_t steps = 0;
    while (rules_[cur].is_transparent && steps <= n) {
      cur = rule_of_[rules_[cur].parent_pos];
      ++steps;
      if (cur == r) break;
    }
    if (cur == r || steps > n) rules_[r].is_transparent = false;
  }
}

namespace {

void append_byte(std::string& out, int b) {
  static const char* hex = "0123456789ABCDEF";
  if (b >= 0x20 && b < 0x7F && b != '\\' && b != ']' && b != '[' && b != '"' && b != '-' && b != '^') {
    out += static_cast<char>(b);
  } else {
    out += "\\x";
    out += hex[b >> 4];
    out += hex[b & 15];
  }
}

std::string set_text(const byte_set& s) {
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!s.contains(static_cast<std::uint8_t>(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && s.contains(static_cast<std::uint8_t>(e + 1))) ++e;
    append_byte(out, b);
    if (e > b) {
      out += '-';
      append_byte(out, e);
    }
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string grammar::to_text() const {
  std::string out;
  for (std::uint32_t r = 0; r < rules_.size(); ++r) {
    const auto& rule = rules_[r];
    if (rule.alt_starts.empty()) continue;
    out += rule.name + " ::=";
    for (std::size_t a = 0; a < rule.alt_starts.size(); ++a) {
      if (a > 0) out += " |";
      for (std::uint32_t pos = rule.alt_starts[a]; elements_[pos].kind != element_kind::end; ++pos) {
        const auto el = elements_[pos];
        out += ' ';
        out += el.kind == element_kind::bytes ? set_text(byte_sets_[el.index]) : rules_[el.index].name;
      }
      if (elements_[rule.alt_starts[a]].kind == element_kind::end) out += " \"\"";
    }
    out += '\n';
  }
  return out;
}

}  // namespace inflight
