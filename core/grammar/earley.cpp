#include "core/grammar/earley.hpp"

#include <algorithm>

namespace inflight {
namespace {

std::uint64_t key_of(earley_item it) { return (std::uint64_t{it.pos} << 32) | it.origin; }

std::size_t slot_of(std::uint64_t key, std::size_t mask) {
  key *= 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(key >> 32) & mask;
}

}  // namespace

earley_parser::earley_parser(const grammar& g, bool leo)
    : g_(&g), leo_enabled_(leo), predicted_stamp_(g.rules().size(), 0) {
  rehash(64);
}

void earley_parser::rehash(std::size_t capacity) {
  keys_.assign(capacity, 0);
  stamps_.assign(capacity, 0);
  std::fill(predicted_stamp_.begin(), predicted_stamp_.end(), 0);
  stamp_ = 1;
  num_in_table_ = 0;
  if (set_start_.empty()) return;
  // Re-insert the set being built.
  for (std::size_t i = set_start_.back(); i < items_.size(); ++i) {
    const std::uint64_t key = key_of(items_[i]);
    std::size_t s = slot_of(key, keys_.size() - 1);
    while (stamps_[s] == stamp_) s = (s + 1) & (keys_.size() - 1);
    keys_[s] = key;
    stamps_[s] = stamp_;
    ++num_in_table_;
  }
}

void earley_parser::begin_set() {
  set_start_.push_back(static_cast<std::uint32_t>(items_.size()));
  if (leo_.size() < set_start_.size()) leo_.resize(set_start_.size());
  leo_[set_start_.size() - 1].clear();
  waiting_start_.push_back(static_cast<std::uint32_t>(waiting_.size()));
  touched_.push_back(false);
  num_in_table_ = 0;
  if (++stamp_ == 0) rehash(keys_.size());
}

void earley_parser::add(earley_item item) {
  if ((num_in_table_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
  const std::uint64_t key = key_of(item);
  const std::size_t mask = keys_.size() - 1;
  std::size_t s = slot_of(key, mask);
  while (stamps_[s] == stamp_) {
    if (keys_[s] == key) return;
    s = (s + 1) & mask;
  }
  keys_[s] = key;
  stamps_[s] = stamp_;
  ++num_in_table_;
  items_.push_back(item);
}

void earley_parser::start_at_root() {
  items_.clear();
  set_start_.clear();
  waiting_.clear();
  waiting_start_.clear();
  touched_.clear();
  has_context_ = false;
  begin_set();
  for (auto start : g_->rules()[g_->root()].alt_starts) add({start, 0});
  close_last_set();
  index_last_set();
}

void earley_parser::index_last_set() {
  const auto& elements = g_->elements();
  const std::size_t first = waiting_.size();
  for (std::size_t i = set_start_.back(); i < items_.size(); ++i) {
    const grammar_element el = elements[items_[i].pos];
    if (el.kind == element_kind::ref) waiting_.push_back({el.index, items_[i]});
  }
  std::sort(waiting_.begin() + static_cast<std::ptrdiff_t>(first), waiting_.end(),
            [](const waiting_item& a, const waiting_item& b) { return a.rule < b.rule; });
}

void earley_parser::start_at(std::uint32_t pos) {
  items_.clear();
  set_start_.clear();
  waiting_.clear();
  waiting_start_.clear();
  touched_.clear();
  // chain[0] is the rule of pos, chain[i + 1] the caller of chain[i] at sites[i].
  std::vector<std::uint32_t> sites;
  std::vector<std::uint32_t> chain{g_->rule_of(pos)};
  while (g_->rules()[chain.back()].is_transparent) {
    sites.push_back(g_->rules()[chain.back()].parent_pos);
    chain.push_back(g_->rule_of(sites.back()));
  }
  has_context_ = true;
  context_rule_ = chain.back();
  // The left-recursive alternatives of a rule that began in set `origin` wait there for it.
  auto add_heads = [&](std::uint32_t rule, std::uint32_t origin) {
    for (auto start : g_->rules()[rule].alt_starts) {
      const grammar_element el = g_->elements()[start];
      if (el.kind == element_kind::ref && el.index == rule) items_.push_back({start, origin});
    }
  };
  // Set j < m holds the call site sites[m-1-j], whose rule began in set j-1 (0 for the
  // top); chain[m-1-j] began in set j, and so (clamped) did the top.
  const std::size_t m = sites.size();
  for (std::size_t j = 0; j < m; ++j) {
    begin_set();
    const auto set = static_cast<std::uint32_t>(j);
    items_.push_back({sites[m - 1 - j], j == 0 ? 0u : set - 1});
    add_heads(chain[m - 1 - j], set);
    if (j == 0) add_heads(chain[m], 0);
    index_last_set();
  }
  begin_set();
  add({pos, static_cast<std::uint32_t>(m == 0 ? 0 : m - 1)});
  close_last_set();
  if (m == 0) add_heads(chain[0], 0);  // after the closure: they must not predict
  index_last_set();
}

void earley_parser::close_last_set() {
  const auto& elements = g_->elements();
  const auto& rules = g_->rules();
  const std::uint32_t cur = static_cast<std::uint32_t>(set_start_.size() - 1);
  for (std::size_t i = set_start_.back(); i < items_.size(); ++i) {
    const earley_item it = items_[i];
    const grammar_element el = elements[it.pos];
    if (el.kind == element_kind::ref) {
      const auto& callee = rules[el.index];
      if (predicted_stamp_[el.index] != stamp_) {
        predicted_stamp_[el.index] = stamp_;
        for (auto start : callee.alt_starts) add({start, cur});
      }
      if (callee.is_nullable) add({it.pos + 1, it.origin});
    } else if (el.kind == element_kind::end) {
      if (has_context_ && it.origin == 0 && el.index == context_rule_) touched_.back() = true;
      // A rule that began in this set is nullable: its callers stepped over it when predicting.
      if (it.origin == cur) continue;
      // A deterministic tail call: only the top of its chain of completions is added.
      if (leo_enabled_ && tail_completion(it.origin, el.index)) {
        add(leo_top(it.origin, el.index));
        continue;
      }
      const auto from = waiting_.begin() + waiting_start_[it.origin];
      const auto to = waiting_.begin() + waiting_start_[it.origin + 1];
      auto lo = std::lower_bound(from, to, el.index, [](const waiting_item& w, std::uint32_t r) { return w.rule < r; });
      // The iterators stay valid: add() grows items_, not waiting_ (this set is not in it yet).
      for (; lo != to && lo->rule == el.index; ++lo) add({lo->item.pos + 1, lo->item.origin});
    }
  }
}

std::optional<earley_item> earley_parser::tail_completion(std::uint32_t origin, std::uint32_t rule) const {
  const auto from = waiting_.begin() + waiting_start_[origin];
  const auto to = waiting_.begin() + waiting_start_[origin + 1];
  auto lo = std::lower_bound(from, to, rule, [](const waiting_item& w, std::uint32_t r) { return w.rule < r; });
  if (lo == to || lo->rule != rule) return std::nullopt;
  if (std::next(lo) != to && std::next(lo)->rule == rule) return std::nullopt;  // several callers
  const earley_item next{lo->item.pos + 1, lo->item.origin};
  if (g_->elements()[next.pos].kind != element_kind::end) return std::nullopt;
  return next;
}

earley_item earley_parser::leo_top(std::uint32_t origin, std::uint32_t rule) {
  leo_path_.clear();
  std::uint32_t o = origin, r = rule;
  earley_item top{};
  for (;;) {
    const auto& memo = leo_[o];
    const auto hit = std::find_if(memo.begin(), memo.end(), [r](const auto& m) { return m.first == r; });
    if (hit != memo.end()) {
      top = hit->second;
      break;
    }
    const earley_item done = *tail_completion(o, r);  // the caller's rule, complete
    leo_path_.push_back({o, r});
    const std::uint32_t caller_rule = g_->elements()[done.pos].index;
    top = done;
    // The context rule's completion at origin 0 is where start_at() mode looks: keep it.
    if (has_context_ && done.origin == 0 && caller_rule == context_rule_) break;
    if (!tail_completion(done.origin, caller_rule)) break;
    o = done.origin;
    r = caller_rule;
  }
  for (const auto& [po, pr] : leo_path_) leo_[po].push_back({pr, top});
  return top;
}

bool earley_parser::try_advance(std::uint8_t byte) {
  const auto& elements = g_->elements();
  const auto& sets = g_->byte_sets();
  const std::uint32_t from = set_start_.back();
  const std::uint32_t to = static_cast<std::uint32_t>(items_.size());
  begin_set();
  for (std::uint32_t j = from; j < to; ++j) {
    const earley_item it = items_[j];
    const grammar_element el = elements[it.pos];
    if (el.kind == element_kind::bytes && sets[el.index].contains(byte)) add({it.pos + 1, it.origin});
  }
  if (items_.size() == to) {
    set_start_.pop_back();
    waiting_start_.pop_back();
    touched_.pop_back();
    return false;
  }
  close_last_set();
  index_last_set();
  return true;
}

bool earley_parser::try_advance_all(std::span<const std::uint8_t> bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (!try_advance(bytes[i])) {
      pop_sets(i);
      return false;
    }
  }
  return true;
}

void earley_parser::pop_sets(std::size_t n) {
  if (n == 0) return;
  const std::size_t keep = set_start_.size() - n;
  items_.resize(set_start_[keep]);
  set_start_.resize(keep);
  waiting_.resize(waiting_start_[keep]);
  waiting_start_.resize(keep);
  touched_.resize(keep);
}

std::span<const earley_item> earley_parser::last_set() const {
  return std::span<const earley_item>(items_).subspan(set_start_.back());
}

bool earley_parser::can_finish() const {
  const auto& elements = g_->elements();
  for (const auto& it : last_set()) {
    const grammar_element el = elements[it.pos];
    if (el.kind == element_kind::end && it.origin == 0 && el.index == g_->root()) return true;
  }
  return false;
}

bool earley_parser::can_continue() const {
  const auto& elements = g_->elements();
  for (const auto& it : last_set())
    if (elements[it.pos].kind == element_kind::bytes) return true;
  return false;
}

}  // namespace inflight
