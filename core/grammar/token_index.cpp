#include "core/grammar/token_index.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>

#include "core/grammar/earley.hpp"

namespace inflight {

grammar_vocab::grammar_vocab(std::vector<std::string> token_bytes, std::vector<token_id> eos_ids)
    : bytes_(std::move(token_bytes)), eos_ids_(std::move(eos_ids)), first_index_(257, 0) {
  for (std::size_t id = 0; id < bytes_.size(); ++id)
    if (!bytes_[id].empty() && !is_eos(static_cast<token_id>(id))) sorted_.push_back(static_cast<token_id>(id));
  std::sort(sorted_.begin(), sorted_.end(), [&](token_id a, token_id b) {
    return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b;
  });
  lcp_.assign(sorted_.size(), 0);
  for (std::size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes_[sorted_[i - 1]];
    const std::string& b = bytes_[sorted_[i]];
    std::uint32_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    lcp_[i] = n;
  }
  // first_index_[b] = first sorted index whose first byte is >= b.
  std::size_t i = 0;
  for (int b = 0; b < 256; ++b) {
    first_index_[b] = static_cast<std::uint32_t>(i);
    while (i < sorted_.size() && static_cast<std::uint8_t>(bytes_[sorted_[i]][0]) == b) ++i;
  }
  first_index_[256] = static_cast<std::uint32_t>(sorted_.size());
  std::size_t max_len = 0;
  for (token_id id : sorted_) max_len = std::max(max_len, bytes_[id].size());
  at_least_.resize(std::max<std::size_t>(max_len, 1) + 2);  // [n]: n >= 2; the last stays empty
  for (std::uint32_t i = 0; i < sorted_.size(); ++i)
    for (std::size_t n = 2; n <= bytes_[sorted_[i]].size(); ++n) at_least_[n].push_back(i);
}

const std::vector<std::uint32_t>& grammar_vocab::sorted_at_least(std::size_t n) const {
  return at_least_[std::clamp<std::size_t>(n, 2, at_least_.size() - 1)];
}

bool grammar_vocab::is_eos(token_id id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

token_index::token_index(std::shared_ptr<const grammar> g, std::shared_ptr<const grammar_vocab> vocab,
                         std::optional<grammar_spec> source, bool share_copies, bool leo)
    : leo_(leo), grammar_(std::move(g)), vocab_(std::move(vocab)), source_(std::move(source)) {
  const auto& elements = grammar_->elements();
  slot_of_pos_.assign(elements.size(), 0);
  std::uint32_t num_slots = 0;
  for (std::size_t pos = 0; pos < elements.size(); ++pos) {
    if (elements[pos].kind == element_kind::bytes) slot_of_pos_[pos] = num_slots++;
    if (elements[pos].kind == element_kind::ref && elements[pos].index == grammar_->root()) is_root_called_ = true;
  }
  once_ = std::make_unique<std::once_flag[]>(num_slots);
  lists_.resize(num_slots);
  shared_.resize(num_slots);
  if (share_copies) find_shared_copies();
}

// Copy k of a chain (1 <= k < the outermost) takes its short tokens from the outermost
// copy at the same offset. A chain nested in a copy of another comes first in repeats(),
// so the enclosing chain's choice wins where both apply; each step of a lookup moves to
// an outermost copy, so lookups end.
void token_index::find_shared_copies() {
  const auto& elements = grammar_->elements();
  for (const repeat_copies& chain : grammar_->repeats()) {
    const std::size_t outer = chain.begins.size() - 1;
    for (std::size_t k = 1; k < outer; ++k)
      for (std::uint32_t pos = chain.begins[k]; pos < chain.ends[k]; ++pos)
        if (elements[pos].kind == element_kind::bytes)
          shared_[slot_of_pos_[pos]] = {chain.begins[outer] + (pos - chain.begins[k]), static_cast<std::uint32_t>(k + 1)};
  }
}

const position_tokens& token_index::tokens_at(std::uint32_t pos) const {
  const std::uint32_t slot = slot_of_pos_[pos];
  std::call_once(once_[slot], [&] {
    const shared_from& from = shared_[slot];
    if (from.min_len == 0) {
      lists_[slot] = std::make_shared<const position_tokens>(compute(pos));
    } else if (vocab_->sorted_at_least(from.min_len).empty()) {
      tokens_at(from.rep);  // every token is short: the outermost copy's lists as they are
      lists_[slot] = lists_[slot_of_pos_[from.rep]];
    } else {
      lists_[slot] = std::make_shared<const position_tokens>(compute_shared(pos, from));
    }
    ++num_computed_;
  });
  return *lists_[slot];
}

std::size_t token_index::num_shared() const {
  return static_cast<std::size_t>(
      std::count_if(shared_.begin(), shared_.end(), [](const shared_from& s) { return s.min_len != 0; }));
}

namespace {

template <typename F>
void for_each_accepted(const position_tokens& t, F&& f) {
  for (token_id id : t.accepted_ids) f(id);
  for (std::size_t w = 0; w < t.accepted_bits.size(); ++w)
    for (std::uint64_t bits = t.accepted_bits[w]; bits != 0; bits &= bits - 1)
      f(static_cast<token_id>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
}

}  // namespace

// The tokens shorter than `from.min_len` as the outermost copy classifies them, the
// longer ones walked from `pos`.
position_tokens token_index::compute_shared(std::uint32_t pos, shared_from from) const {
  const grammar_vocab& v = *vocab_;
  const position_tokens walked = compute(pos, from.min_len);
  const position_tokens& rep = tokens_at(from.rep);
  auto is_long = [&](token_id id) { return v.bytes(id).size() >= from.min_len; };
  auto bit = [](token_id id) { return std::uint64_t{1} << (id & 63); };
  auto word = [](token_id id) { return static_cast<std::size_t>(id) >> 6; };

  // The rep's accepted tokens as a mask; its long ones leave it (and its counts), the
  // walked ones join it.
  std::vector<std::uint64_t> mask = rep.accepted_bits;
  if (mask.empty()) {
    mask.assign(v.num_mask_words(), 0);
    for (token_id id : rep.accepted_ids) mask[word(id)] |= bit(id);
  }
  std::uint32_t rep_long_classified = 0;  // long tokens the rep accepted or found uncertain
  for (std::uint32_t i : v.sorted_at_least(from.min_len)) {
    const token_id id = v.sorted()[i];
    if (mask[word(id)] & bit(id)) ++rep_long_classified;
    mask[word(id)] &= ~bit(id);
  }
  std::uint32_t walked_accepted = 0;
  for_each_accepted(walked, [&](token_id id) {
    mask[word(id)] |= bit(id);
    ++walked_accepted;
  });

  position_tokens out;
  for (std::uint32_t i : rep.uncertain) {
    if (is_long(v.sorted()[i]))
      ++rep_long_classified;
    else
      out.uncertain.push_back(i);
  }
  const auto num_short_uncertain = static_cast<std::ptrdiff_t>(out.uncertain.size());
  out.uncertain.insert(out.uncertain.end(), walked.uncertain.begin(), walked.uncertain.end());
  std::inplace_merge(out.uncertain.begin(), out.uncertain.begin() + num_short_uncertain, out.uncertain.end());

  std::size_t num_accepted = 0;
  for (std::uint64_t w : mask) num_accepted += static_cast<std::size_t>(std::popcount(w));
  out.accepted_bits = std::move(mask);
  if (num_accepted <= out.accepted_bits.size()) {  // few: an id list, as compute() keeps them
    for_each_accepted(out, [&](token_id id) { out.accepted_ids.push_back(id); });
    out.accepted_bits.clear();
  }

  // Every long token under this position's first bytes was walked once: accepted,
  // uncertain or rejected, here and (in the rep's own walk) there.
  const auto long_total = walked_accepted + static_cast<std::uint32_t>(walked.uncertain.size()) + walked.num_rejected;
  out.num_rejected = rep.num_rejected - (long_total - rep_long_classified) + walked.num_rejected;
  return out;
}

void token_index::warm_up() const {
  const auto& elements = grammar_->elements();
  for (std::uint32_t pos = 0; pos < elements.size(); ++pos)
    if (elements[pos].kind == element_kind::bytes) tokens_at(pos);
}

std::size_t token_index::num_computed() const { return num_computed_.load(); }

// Depth-first over the sorted vocabulary from one position (see the header comment),
// skipping the tokens shorter than `min_len`.
position_tokens token_index::compute(std::uint32_t pos, std::size_t min_len) const {
  const grammar_vocab& v = *vocab_;
  if (min_len >= 2 && v.sorted_at_least(min_len).empty()) return {};
  const auto& sorted = v.sorted();
  const auto& lcp = v.lcp();
  earley_parser parser(*grammar_, leo_);
  parser.start_at(pos);
  const byte_set& first = grammar_->byte_sets()[grammar_->elements()[pos].index];

  // Completing a root that nothing calls ends the text: nothing can follow, so a token
  // that goes on after it is rejected, not uncertain.
  const bool is_context_final = parser.context_rule() == grammar_->root() && !is_root_called_;

  // The walk goes over entries j of a sequence of sorted indices: all of them, or the
  // tokens of min_len bytes or more (still sorted, so still a trie walk).
  const std::vector<std::uint32_t>* subset = min_len >= 2 ? &v.sorted_at_least(min_len) : nullptr;
  auto index_at = [&](std::uint32_t j) { return subset ? (*subset)[j] : j; };
  auto entry_of = [&](std::uint32_t sorted_index) {  // the first entry at or after a sorted index
    if (!subset) return sorted_index;
    return static_cast<std::uint32_t>(std::lower_bound(subset->begin(), subset->end(), sorted_index) - subset->begin());
  };
  auto lcp_at = [&](std::uint32_t j) -> std::uint32_t {  // bytes entry j shares with entry j - 1
    if (!subset) return lcp[j];
    const std::string& a = v.bytes(sorted[(*subset)[j - 1]]);
    const std::string& c = v.bytes(sorted[(*subset)[j]]);
    const std::size_t n = std::min(a.size(), c.size());
    return static_cast<std::uint32_t>(std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), c.begin()).first -
                                      a.begin());
  };

  std::vector<token_id> accepted;
  position_tokens out;
  // touched[k]: the context was touched after consuming some k' <= k bytes (k' >= 1).
  std::vector<std::uint8_t> touched{0};
  std::size_t depth = 0;
  for (int b = 0; b < 256; ++b) {
    if (!first.contains(static_cast<std::uint8_t>(b))) continue;
    const std::uint32_t begin = entry_of(v.first_index(b));
    const std::uint32_t end = entry_of(v.first_index(b + 1));
    parser.pop_sets(depth);
    depth = 0;
    touched.resize(1);
    for (std::uint32_t j = begin; j < end;) {
      const std::string& t = v.bytes(sorted[index_at(j)]);
      const std::size_t common = j == begin ? 0 : std::min<std::size_t>(lcp_at(j), depth);
      parser.pop_sets(depth - common);
      depth = common;
      touched.resize(depth + 1);
      bool is_dead = false;
      while (depth < t.size()) {
        if (!parser.try_advance(static_cast<std::uint8_t>(t[depth]))) {
          is_dead = true;
          break;
        }
        ++depth;
        touched.push_back(touched.back() || (!is_context_final && parser.last_set_touched_context()));
      }
      if (!is_dead) {
        accepted.push_back(sorted[index_at(j++)]);
        continue;
      }
      // Every token sharing the dead prefix t[0..depth] dies at the same byte.
      const bool is_uncertain = touched[depth] != 0;
      do {
        if (is_uncertain)
          out.uncertain.push_back(index_at(j));
        else
          ++out.num_rejected;
        ++j;
      } while (j < end && lcp_at(j) > depth);
    }
  }
  parser.pop_sets(depth);

  const std::size_t num_words = v.num_mask_words();
  if (accepted.size() > num_words) {
    out.accepted_bits.assign(num_words, 0);
    for (token_id id : accepted) out.accepted_bits[id >> 6] |= std::uint64_t{1} << (id & 63);
  } else {
    out.accepted_ids = std::move(accepted);
  }
  return out;
}

}  // namespace inflight
