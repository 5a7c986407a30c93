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
/// Completions of deterministic tail calls are taken in one step (Leo's optimization):
/// when the rule completed has exactly one caller waiting in its origin set and that
/// caller's reference is the last element of its alternative, the caller completes too,
/// and so on up; only the topmost completion is added. A bounded repetition lowers into
/// a right-recursive chain of optional copies, so this keeps a byte inside copy k at a
/// constant number of items instead of k completions.
///
/// The token cache also runs this parser from a single grammar position (start_at()),
/// with the static callers of transparent rules below it as "virtual" sets: completing
/// the first rule that is not transparent marks the set as having touched the context.

#include <cstdint>
#include <optional>
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
  /// `leo` false completes every tail call one by one (the plain algorithm, for tests
  /// that compare the two).
  explicit earley_parser(const grammar& g, bool leo = true);

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
  /// The one caller of `rule` waiting in set `origin`, advanced past the reference, when
  /// that makes an end item (a tail call); nullopt when there are none, several, or the
  /// caller continues after the reference.
  std::optional<earley_item> tail_completion(std::uint32_t origin, std::uint32_t rule) const;
  /// The topmost completion of the chain of tail calls that completing `rule` from set
  /// `origin` starts (tail_completion(origin, rule) must exist); memoized per set.
  earley_item leo_top(std::uint32_t origin, std::uint32_t rule);
  void close_last_set();
  void begin_set();
  void index_last_set();
  void rehash(std::size_t capacity);

  const grammar* g_;
  bool leo_enabled_ = true;
  std::vector<earley_item> items_;
  std::vector<std::uint32_t> set_start_;
  // Per set, its items waiting for a rule, sorted by rule: completing a rule looks up
  // its callers in the origin set by binary search instead of scanning the whole set.
  std::vector<waiting_item> waiting_;
  std::vector<std::uint32_t> waiting_start_;
  std::vector<bool> touched_;
  // Per set: rule -> the topmost completion of its tail-call chain (leo_top's memo).
  std::vector<std::vector<std::pair<std::uint32_t, earley_item>>> leo_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> leo_path_;  // scratch of leo_top
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
