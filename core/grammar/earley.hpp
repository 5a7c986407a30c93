#pragma once
/// A byte-level Earley recognizer over a lowered `grammar`: the pushdown automaton of
/// constrained decoding. One Earley set per consumed byte; the sets form a stack, so
/// undoing bytes (token rollback, trying a token and taking it back) is popping sets.
///
///   items_:      [ set 0 items | set 1 items | ... | set n items ]
///   set_start_:    ^0            ^k1           ...   ^kn
///
/// An item is (pos, origin): `pos` is the dot (an element index of the grammar), `origin`
/// the set where the item's rule was predicted. Nullable rules use Aycock-Horspool's fix
/// (predicting a nullable rule also steps over it), so a set is closed in one pass.
///
/// The token cache also runs this parser from a single grammar position (start_at()),
/// with the static callers of transparent rules below it as "virtual" sets: completing
/// the first rule that is not transparent marks the set as having touched the context.

#include <cstdint>
#include <span>
#include <vector>

#include "core/grammar/grammar.hpp"

namespace inflight {

struct earley_item {
  std::uint32_t pos = 0;
  std::uint32_t origin = 0;
  friend bool operator==(const earley_item&, const earley_item&) = default;
};

class earley_parser {
 public:
  explicit earley_parser(const grammar& g);

  /// One set: the root's alternatives, closed.
  void start_at_root();
  /// Virtual sets for the callers of transparent rules around `pos` (a bytes element),
  /// then one set holding the item at `pos`.
  void start_at(std::uint32_t pos);

  /// Scans `byte` from the last set and closes the new set. False, with nothing pushed,
  /// when no item accepts the byte.
  bool try_advance(std::uint8_t byte);
  /// Pushes `bytes` one by one; on failure pops what it pushed and returns false.
  bool try_advance_all(std::span<const std::uint8_t> bytes);
  /// Removes the last `n` sets.
  void pop_sets(std::size_t n);

  std::size_t num_sets() const { return set_start_.size(); }
  std::span<const earley_item> last_set() const;
  /// The root is complete over everything consumed (started with start_at_root()).
  bool can_finish() const;
  /// Some item of the last set can consume another byte.
  bool can_continue() const;
  /// In start_at() mode: the last set completed the rule at the top of the static chain.
  bool last_set_touched_context() const { return touched_.back(); }
  /// In start_at() mode: the rule at the top of the static chain.
  std::uint32_t context_rule() const { return context_rule_; }

 private:
  // An item whose dot is before a rule reference, filed under that rule.
  struct waiting_item {
    std::uint32_t rule = 0;
    earley_item item;
  };

  void add(earley_item item);
  void close_last_set();
  void begin_set();
  void index_last_set();
  void rehash(std::size_t capacity);

  const grammar* g_;
  std::vector<earley_item> items_;
  std::vector<std::uint32_t> set_start_;
  // Per set, its items waiting for a rule, sorted by rule: completing a rule looks up
  // its callers in the origin set by binary search instead of scanning the whole set.
  std::vector<waiting_item> waiting_;
  std::vector<std::uint32_t> waiting_start_;
  std::vector<bool> touched_;
  // start_at() mode: completing `context_rule_` at origin 0 touches the context.
  bool has_context_ = false;
  std::uint32_t context_rule_ = 0;
  // Dedupe of the set being built: open addressing, stamped so that no clear is needed.
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> stamps_;
  std::uint32_t stamp_ = 0;
  std::size_t num_in_table_ = 0;
  std::vector<std::uint32_t> predicted_stamp_;  // per rule
};

}  // namespace inflight
